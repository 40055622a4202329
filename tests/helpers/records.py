"""Helpers for tests that need records: scripted runs, parts, re-encoding."""

import io
import json

from ember import Simulator
from ember.canonical import canonical_record
from ember.record.writer import RecordWriter


def scripted(plan):
    """A policy from a list of {person_id: action}; unnamed active people stay."""
    steps = iter(plan)

    def policy(observation):
        chosen = next(steps, {})
        return {p["person_id"]: chosen.get(p["person_id"], "stay") for p in observation["people"]}

    return policy


def record_bytes(scenario, policy, seed=0):
    sim = Simulator(scenario, seed)
    out = io.BytesIO()
    writer = RecordWriter(out)
    writer.start(sim.header, sim.initial_state)
    while not sim.terminated:
        step = sim.step(policy(sim.observe()))
        writer.on_step(step, sim.final_state)
    return out.getvalue()


def parts(data):
    return json.loads(data)


def encode(record):
    return canonical_record(record["header"], record["initial_state"], record["steps"], record["final_state"])
