"""``measure_run``: the way in for an episode run in EMBER's own simulator; its steps go to the same
accumulators as a record's, directly."""

import contextlib
import hashlib
from typing import NamedTuple

from ..checks.replay import ReplayedStep
from ..metrics.report import EpisodeMetrics
from ..record.writer import writing_record
from ..scenario import compile_scenario
from ..sim.loop import EpisodeSink, resolve_policy, run_policy
from ..sim.policies import reads_only
from ..sim.simulator import Simulator, collector_paused
from .core import EpisodeEngine


class MeasuredRun(NamedTuple):
    """What ``measure_run`` gives: the episode's metrics, its final state (simulator.md §5) and,
    when the record was written, the hex SHA-256 of its (uncompressed) canonical bytes, else None."""

    metrics: EpisodeMetrics
    final_state: dict
    record_sha256: str | None


class MeasuringSink(EpisodeSink):
    """A sink of the episode loop (``sim.loop``) that measures: each step to an ``EpisodeEngine``.

    The simulator's own steps need no reading or replay: each becomes a
    replayed transition (``EpisodeEngine.replayed_step``) from the step and
    the state ``simulator`` holds after it.  The step that ends the episode
    ends the engine too: ``engine.result`` is then the ``EpisodeMetrics``.
    """

    def __init__(self, engine, simulator):
        self.engine = engine
        self.simulator = simulator

    def start(self, header, initial_state):
        self.engine.header(header)
        self.engine.initial_state(initial_state)

    def on_step(self, step, final_state):
        engine = self.engine
        engine.replayed_step(ReplayedStep(self.simulator, step))
        if final_state is not None:
            engine.final_state(final_state)
            engine.end()


def measure_run(scenario, policy, seed, out=None, *, live=True):
    """Run ``policy`` on ``scenario`` under ``seed`` in EMBER's simulator and measure it as it runs.

    The simulator-driven entry point (campaign.md §3): the one episode loop
    (``sim.loop.run_policy``) hands each step straight to the metric
    accumulators as a replayed transition (``MeasuringSink``), as the
    canonical-line fast path does, without encoding, re-reading or
    replaying it; memory stays constant in the number of steps.

    ``scenario`` is a scenario dict or a compiled scenario (an invalid one
    raises ``ScenarioError``, as ``run_episode``); ``policy`` a callable
    ``observation -> {person_id: action}`` or the name of a built-in policy;
    ``seed`` as for ``Simulator`` (a bad one raises its ``SeedError``).
    Illegal actions raise ``ActionError``, as in ``run_episode``.  With
    ``out`` (a path or a binary file) the canonical record is written there
    as it runs by the same writer as ``run_episode``'s, byte-identical,
    flushed step by step (a path through the one record opener,
    ``record.output.open_record_output``: ``.gz`` or ``.zst`` compressed).
    ``live=False`` writes a path complete or not at all, without a flush
    per part (the opener's whole mode, for a record nobody follows).

    Returns a ``MeasuredRun(metrics, final_state, record_sha256)``:
    ``metrics`` is exactly what ``episode_metrics(scenario, record)`` gives
    for that record, ``final_state`` the record's final state,
    ``record_sha256`` the hex SHA-256 of the record's canonical bytes when
    ``out`` was given (hashed as they are written), else None.
    """
    compiled = compile_scenario(scenario)
    # A built-in policy only reads its observations, and the steps go to the engine and the writer:
    # the simulator may share its lists (docs/decisions.md, "Scale"), and as EMBER's own code makes no
    # cycles, the collector is paused for the episode, as the simulator pauses it inside a step.
    built_in = reads_only(policy)
    simulator = Simulator(compiled, seed, shared_lists=built_in)
    policy = resolve_policy(policy, simulator)
    engine = EpisodeEngine(compiled, replay=False, simulator_steps_only=True)
    measuring = MeasuringSink(engine, simulator)
    with collector_paused() if built_in else contextlib.nullcontext():
        if out is None:
            final_state = run_policy(simulator, policy, (measuring,))
            return MeasuredRun(engine.result, final_state, None)
        digest = hashlib.sha256()
        with writing_record(out, live=live, digest=digest) as writer:  # the -o rules of run_episode (decisions.md)
            final_state = run_policy(simulator, policy, (measuring, writer))
    return MeasuredRun(engine.result, final_state, digest.hexdigest())
