#!/usr/bin/env python3
"""A bottleneck episode analysed with PedPy: density profile and n-t curve at the exit.

Needs the ``analysis`` extra (PedPy, Python 3.11+) and matplotlib (``report``):

    pip install 'ember-eval[analysis,report]'
    python examples/pedpy_bottleneck.py -o docs/interop-bottleneck.png

Runs EMBER's planner on a generated bottleneck floor (a crowded room
emptying through a one-cell corridor), loads the episode into PedPy with
``ember.interop.pedpy.load`` (0.4 m cells, 0.3 s steps) and draws the mean
classic density per cell over the episode, the exit's measurement line,
and PedPy's cumulative count of people past that line against EMBER's own
evacuation steps.
"""

import argparse
import collections
import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pedpy  # noqa: E402
import shapely  # noqa: E402

import ember  # noqa: E402
from ember.generate import generate  # noqa: E402
from ember.interop.pedpy import load  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="interop-bottleneck.png", help="the PNG to write")
    parser.add_argument("--seed", type=int, default=0, help="generator and episode seed (default: 0)")
    args = parser.parse_args()

    scenario = generate("bottleneck", args.seed, people=60, spread="1/50")
    with tempfile.TemporaryDirectory() as folder:
        record = os.path.join(folder, "bottleneck.record")
        ember.run_episode(scenario, "planner", args.seed, record)
        metrics = ember.episode_metrics(scenario, record).to_dict()
        trajectories, walkable_area, lines = load(scenario, record)

    # PedPy's count of crossings per exit, summed over the exit's lines, against EMBER's evacuations.
    crossings = collections.Counter()
    for exit_id, exit_lines in lines.items():
        for line in exit_lines:
            _, frames = pedpy.compute_n_t(traj_data=trajectories, measurement_line=line)
            crossings.update({exit_id: len(frames)})
    print("evacuations per exit, EMBER:", metrics["exits"]["evacuations_per_exit"], " PedPy:", dict(crossings))

    # The mean classic density of each 0.4 m cell over every frame (people / m^2): PedPy's grid starts at the
    # walkable area's bounds, which are cell edges, so its cells are EMBER's.  Cells outside the walkable area
    # (walls, the outside) are blanked.
    profiles = pedpy.compute_density_profile(
        data=trajectories.data,
        walkable_area=walkable_area,
        grid_size=0.4,
        density_method=pedpy.DensityMethod.CLASSIC,
    )
    mean = np.mean(profiles, axis=0)
    min_x, _, _, max_y = walkable_area.bounds
    rows, cols = mean.shape
    centres_x = min_x + 0.4 * (np.arange(cols) + 0.5)
    centres_y = max_y - 0.4 * (np.arange(rows) + 0.5)
    inside = shapely.contains_xy(walkable_area.polygon, *np.meshgrid(centres_x, centres_y))
    mean[~inside] = np.nan

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.35, 1]})
    full = 1 / 0.4**2  # one person in every cell, every frame: 6.25 / m^2
    pedpy.plot_profiles(
        walkable_area=walkable_area, profiles=[mean], axes=left, label="density / 1/m²", vmin=0, vmax=full
    )
    every_line = [line for exit_lines in lines.values() for line in exit_lines]
    pedpy.plot_measurement_setup(walkable_area=walkable_area, measurement_lines=every_line, axes=left, ml_width=3)
    left.set_title("mean density over the episode (PedPy, classic)")
    left.set_xlabel("x / m")
    left.set_ylabel("y / m")

    step_seconds = 0.3
    for exit_id, exit_lines in lines.items():
        frames = []
        for line in exit_lines:
            frames += list(pedpy.compute_n_t(traj_data=trajectories, measurement_line=line)[1]["frame"])
        frames.sort()
        right.step(
            [f * step_seconds for f in frames], range(1, len(frames) + 1), where="post", label=f"PedPy, {exit_id}"
        )
    steps = sorted(metrics["time"]["evacuation_steps"].values())
    right.plot(
        [t * step_seconds for t in steps], range(1, len(steps) + 1), "k.", markersize=3, label="EMBER evacuations"
    )
    right.set_title("people past the exit line")
    right.set_xlabel("t / s")
    right.set_ylabel("N")
    right.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=72)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
