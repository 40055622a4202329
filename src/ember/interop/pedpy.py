"""An EMBER episode as PedPy objects: ``load(scenario, record)``.

The trajectories go through the text file that ``ember trajectories``
writes and PedPy's own reader of it, the geometry through the WKT texts
of ``ember trajectories --geometry``: what ``load`` returns is what a
PedPy user gets from those two files.  PedPy (the ``analysis`` extra,
Python 3.11 or later) is imported when ``load`` is called.
"""

import pathlib
import tempfile

from ..errors import MissingExtraError
from ..scenario import compile_scenario
from .geometry import INSTALL_HINT, geometry_document
from .scale import DEFAULT_CELL_SIZE, DEFAULT_STEP_SECONDS, Scale
from .trajectories import write_trajectories


def _pedpy():
    try:
        import pedpy
    except ImportError as exc:
        raise MissingExtraError(
            f"ember.interop.pedpy needs PedPy, of the 'analysis' extra ({exc}): {INSTALL_HINT}"
        ) from exc
    return pedpy


def load(scenario, record, cell_size=DEFAULT_CELL_SIZE, step_seconds=DEFAULT_STEP_SECONDS):
    """``(TrajectoryData, WalkableArea, {exit_id: [MeasurementLine, ...]})`` of one episode.

    ``scenario`` and ``record`` as for ``episode_metrics`` (the record is
    validated and replayed; a bad one raises ``MetricsInputError``);
    ``cell_size`` in metres and ``step_seconds`` in seconds, positive
    numbers or their decimal texts (``InteropError`` otherwise).  Summing
    ``pedpy.compute_n_t`` over an exit's lines counts the evacuations
    through that exit at their evacuation steps (docs/interop.md).
    """
    scale = Scale(cell_size, step_seconds)
    pedpy = _pedpy()
    compiled = compile_scenario(scenario)
    document = geometry_document(compiled, scale)
    with tempfile.TemporaryDirectory(prefix="ember-pedpy-") as folder:
        path = pathlib.Path(folder) / "trajectories.txt"
        write_trajectories(compiled, record, path, scale)
        trajectories = pedpy.load_trajectory_from_txt(trajectory_file=path)
    walkable_area = pedpy.WalkableArea(document["walkable_area"])
    lines = {
        exit_id: [pedpy.MeasurementLine(text) for text in texts]
        for exit_id, texts in document["measurement_lines"].items()
    }
    return trajectories, walkable_area, lines
