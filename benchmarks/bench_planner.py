"""Speed of the built-in policies on builtin:hall (200x200, 1,000 people).

For each policy, one episode of up to ``--steps`` steps runs in the
simulator; the time spent inside the policy's calls and inside the
simulator's ``step`` are measured apart (CPU time).  Printed per policy:

  policy      the built-in policy
  steps       steps run (the episode may end earlier)
  policy/s    policy calls per second (the policy's own cost)
  episode/s   whole simulator steps per second (observe + policy + step)
  ratio       policy time / greedy policy time in the same run (the floor)

Usage::

    python benchmarks/bench_planner.py                   # hall, 300 steps, greedy and planner
    python benchmarks/bench_planner.py --scenario builtin:ember-v1/large-hall-casualty --steps 500
"""

import argparse
import time

import ember
from ember.sim.policies import make_policy


def measure(scenario, name, steps, seed):
    sim = ember.Simulator(scenario, seed)
    policy = make_policy(name, sim.scenario, seed)
    in_policy = in_sim = 0.0
    clock = time.process_time
    done = 0
    while not sim.terminated and done < steps:
        t0 = clock()
        observation = sim.observe()
        t1 = clock()
        actions = policy(observation)
        t2 = clock()
        sim.step(actions)
        t3 = clock()
        in_policy += t2 - t1
        in_sim += (t1 - t0) + (t3 - t2)
        done += 1
    return done, in_policy, in_sim


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="builtin:hall")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default="greedy,planner")
    args = parser.parse_args()
    scenario = ember.load_scenario(args.scenario)
    rows = [(name, *measure(scenario, name, args.steps, args.seed)) for name in args.policies.split(",")]
    floor = next((r[2] for r in rows if r[0] == "greedy"), None)
    print(f"{args.scenario}, seed {args.seed}, up to {args.steps} steps (CPU seconds)")
    print(f"| {'policy':<8} | {'steps':>5} | {'policy/s':>9} | {'episode/s':>9} | {'ratio':>5} |")
    print(f"|{'-' * 10}|{'-' * 7}:|{'-' * 10}:|{'-' * 10}:|{'-' * 6}:|")
    for name, done, in_policy, in_sim in rows:
        ratio = f"{in_policy / floor:.2f}" if floor else "-"
        calls, episode = done / in_policy, done / (in_policy + in_sim)
        print(f"| {name:<8} | {done:>5} | {calls:>9,.0f} | {episode:>9,.0f} | {ratio:>5} |")


if __name__ == "__main__":
    main()
