#!/usr/bin/env python3
"""A greedy EMBER agent: a standalone example of docs/agent-protocol.md.

Run it with

    ember run builtin:office --agent "python3 examples/greedy_agent.py" -o office.record

It needs only the Python standard library.  Its rule is the built-in
``greedy`` policy of simulator.md §4, so ``--agent`` with this script and
``--policy greedy`` write byte-identical records for the same scenario and
seed: each active person moves to the first neighbour, in the order north,
south, west, east, that is one step closer to the nearest usable exit
(distances through in-bounds cells that are neither walls nor burning,
people ignored), and stays when no usable exit is reachable.

Protocol reminders: one JSON message per line on stdin; one answer line
per observation on stdout, flushed at once; anything else (logs) goes to
stderr.
"""

import json
import sys
from collections import deque

MOVES = (("north", -1, 0), ("south", 1, 0), ("west", 0, -1), ("east", 0, 1))


class Greedy:
    def __init__(self, scenario):
        self.rows = scenario["grid"]["rows"]
        self.cols = scenario["grid"]["cols"]
        self.walls = {tuple(cell) for cell in scenario["walls"]}
        self.exits = [tuple(e["position"]) for e in scenario["exits"]]

    def distances(self, burning):
        """Breadth-first distance from the usable exits through passable cells."""
        blocked = self.walls | burning
        dist = {}
        frontier = deque()
        for cell in self.exits:
            if cell not in blocked:  # a burning exit is not usable
                dist[cell] = 0
                frontier.append(cell)
        while frontier:
            row, col = frontier.popleft()
            for _, dr, dc in MOVES:
                nxt = (row + dr, col + dc)
                if 0 <= nxt[0] < self.rows and 0 <= nxt[1] < self.cols and nxt not in blocked and nxt not in dist:
                    dist[nxt] = dist[(row, col)] + 1
                    frontier.append(nxt)
        return dist

    def act(self, observation):
        dist = self.distances({tuple(cell) for cell in observation["burning"]})
        actions = {}
        for person in observation["people"]:
            row, col = person["position"]
            action = "stay"
            own = dist.get((row, col))
            if own is not None:
                for name, dr, dc in MOVES:
                    if dist.get((row + dr, col + dc)) == own - 1:
                        action = name
                        break
            actions[person["person_id"]] = action
        return actions


def main():
    policy = None
    for line in sys.stdin.buffer:
        message = json.loads(line)
        kind = message.get("type")
        if kind == "scenario":
            policy = Greedy(message["scenario"])
        elif kind == "observation":
            answer = policy.act(message["observation"])
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()  # EMBER waits for this line: never leave it in a buffer
        elif kind == "end":
            break  # message["final_state"] holds the outcome
        # Unknown message types are ignored, as the protocol asks.


if __name__ == "__main__":
    main()
