"""The one episode loop: policy → simulator → each step to its sinks.

Every episode EMBER runs goes through here: ``ember run`` and
``run_episode`` (the record writer is a sink), ``engine.measure_run`` and
campaigns (the engine's measuring sink, and the writer when a record is
kept), and the Gymnasium and PettingZoo environments (stepped from outside
by an RL agent, through ``EpisodeStepper.step``).

A **sink** (``EpisodeSink``) follows one episode in record order
(simulator.md §5) through two calls:

    start(header, initial_state)   once, before the first step
    on_step(step, final_state)     after each step; ``final_state`` is None
                                   until the step that ends the episode,
                                   then the episode's final state

(``on_step``, not ``step``: ``step(actions)`` is what a simulator and an
``EpisodeStepper`` do; a sink is told of a step taken.)

Two forms, one place where a simulator step becomes sink calls:

* ``EpisodeStepper`` is the stepping form: ``EpisodeStepper.step(actions)`` steps the
  simulator and hands the step to every sink.  An environment calls it
  with the actions its agent chose.
* ``run_policy`` is the driven form: it asks the policy for each step's
  actions and calls ``EpisodeStepper.step`` until the episode terminates.

An illegal action raises ``ActionError`` from the simulator before any sink
sees the step (the simulator's state is unchanged).  Nothing here knows of
records, checks or metrics: sinks do (architecture.md: Sim imports neither
Record nor Checks nor the engine).
"""

import typing

from .policies import make_policy


class EpisodeSink(typing.Protocol):
    """What follows one episode of the loop, in record order (simulator.md §5)."""

    def start(self, header, initial_state):
        """Once, before the first step."""

    def on_step(self, step, final_state):
        """After each step; ``final_state`` is None until the step that ends the episode."""


class EpisodeStepper:
    """One episode of ``simulator`` whose every step goes to ``sinks`` (started here, in order)."""

    __slots__ = ("simulator", "sinks")

    def __init__(self, simulator, sinks: "typing.Iterable[EpisodeSink]" = ()):
        self.simulator = simulator
        self.sinks = tuple(sinks)
        for sink in self.sinks:
            sink.start(simulator.header, simulator.initial_state)

    @property
    def terminated(self):
        return self.simulator.terminated

    @property
    def final_state(self):
        """The final state once the episode has terminated, else None."""
        return self.simulator.final_state

    def observe(self):
        """The official observation (simulator.md §4) for the step about to be taken."""
        return self.simulator.observe()

    def step(self, actions):
        """Run one step with ``actions`` ({person_id: action}); every sink sees it; the step dict."""
        simulator = self.simulator
        step = simulator.step(actions)
        final_state = simulator.final_state
        for sink in self.sinks:
            sink.on_step(step, final_state)
        return step


def resolve_policy(policy, simulator):
    """``policy`` as a callable: a built-in policy's name is made for ``simulator``'s scenario and seed
    (to read a shared-lists simulator's observations as such, ``make_policy``)."""
    if isinstance(policy, str):
        return make_policy(policy, simulator.scenario, simulator.seed, shared_observations=simulator.shared_lists)
    return policy


def run_policy(simulator, policy, sinks=()):
    """Run ``policy`` on ``simulator`` to termination, every step to ``sinks``; the final state.

    ``policy`` is a callable ``observation -> {person_id: action}`` or the
    name of a built-in policy (resolved before any sink starts, so an
    unknown name starts nothing).
    """
    policy = resolve_policy(policy, simulator)
    episode = EpisodeStepper(simulator, sinks)
    observe, step = simulator.observe, episode.step
    while not simulator.terminated:
        step(policy(observe()))
    return simulator.final_state
