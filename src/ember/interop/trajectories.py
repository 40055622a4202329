"""An episode as PedPy's plain-text trajectories (``pedpy.load_trajectory_from_txt``).

One line ``id frame x y z`` per person present in a frame; frame t is
step t (frame 0 the initial state), so the frame rate is 1 / step
seconds; x and y are the centre of the person's cell in metres
(``coordinates``), z is 0.  The ``#`` header gives PedPy the frame rate
(``#framerate: ...``, the first header line, the only one naming it) and
the unit (``x/m``), then says what the file is and maps PedPy's integer
ids to EMBER's person IDs: id k is the k-th person in ID order.

Who is in frame t:

- every person active in s_t, at its cell;
- a person evacuated at step t, at the exit cell, in frames t and t + 1
  and then never again.  PedPy labels a movement by the frame it ends in
  and drops the move into a trajectory's last frame, so the second frame
  is what makes the move onto the exit (a crossing of that exit's
  measurement line, ``geometry``) count at frame t, the evacuation step.
  An evacuation at the last step T gives its evacuee a frame T + 1, the
  only frame past the episode;
- a person who became a casualty at step t is last shown in frame t - 1:
  its move into the fire, perhaps onto a burning exit, is no crossing.

The record is read once through the engine (stages 1-2, replay) and each
frame is written as its state passes the checks, so memory holds one step
whatever the record's length; a record that fails leaves no file (the
``-o`` rules of ``files.output_file``).
"""

from ..engine.read import measure_record
from ..files import output_file
from ..scenario import compile_scenario
from .coordinates import PlanCoordinates
from .scale import Scale

SHOWN, LEAVING = 0, 1  # a present person: as it is, or evacuated a frame ago (its last frame)


def header_lines(compiled, scale):
    """The ``#`` lines before the data (the framerate line first: PedPy takes the first number it finds)."""
    rows, cols = compiled.grid.rows, compiled.grid.cols
    lines = [
        f"#framerate: {float(scale.frame_rate)!r}",
        "# EMBER episode trajectories for PedPy (pedpy.load_trajectory_from_txt); see EMBER's docs/interop.md",
        f"# scenario {compiled.scenario_id} {compiled.hash}",
        f"# grid {rows} x {cols} cells; {scale.describe()}; one frame per step, frame t = step t",
        "# x/m y/m z/m: the centre of the person's cell, x = (col + 1/2) * cell, y = (rows - row - 1/2) * cell",
        "# an evacuee stays at its exit cell for one frame after its evacuation step; a casualty leaves before it",
        "# columns: id frame x y z",
        "# ids: id person_id",
    ]
    lines += [f"# {index + 1} {person_id}" for index, person_id in enumerate(compiled.person_ids)]
    return "".join(line + "\n" for line in lines)


class TrajectoryWriter:
    """The engine's state callback: writes each state's frame to a binary ``stream`` as it comes."""

    def __init__(self, compiled, scale, stream):
        self.stream = stream
        grid = compiled.grid
        self.coordinates = PlanCoordinates(grid.rows, grid.cols, scale.cell_size)
        self.present = list(range(len(compiled.person_ids)))  # person indexes in this frame, in ID order
        self.state = bytearray(len(self.present))  # SHOWN or LEAVING, per person
        self.last_step = None
        self.last_people = None  # the people of the last state, for ``finish``
        stream.write(header_lines(compiled, scale).encode("utf-8"))

    def add(self, t, snapshot):
        """Frame t from state s_t (``on_state`` of ``EpisodeEngine``)."""
        people = snapshot["people"]
        state, text = self.state, self.coordinates.centre_text
        lines, still = [], []
        for i in self.present:
            person = people[i]
            if state[i] == SHOWN:
                status = person["status"]
                if status == "casualty":
                    continue  # its last frame was t - 1
                if status == "evacuated":
                    state[i] = LEAVING  # shown now and once more
                still.append(i)
            row, col = person["position"]
            lines.append(f"{i + 1} {t} {text(row, col)} 0\n")
        self.present = still
        self.last_step = t
        self.last_people = people
        self._write(lines)

    def finish(self):
        """The frame after the last step, for those who evacuated at that step."""
        t = self.last_step + 1
        text = self.coordinates.centre_text
        lines = []
        for i in self.present:
            if self.state[i] == LEAVING:
                row, col = self.last_people[i]["position"]
                lines.append(f"{i + 1} {t} {text(row, col)} 0\n")
        self._write(lines)

    def _write(self, lines):
        if lines:
            self.stream.write("".join(lines).encode("ascii"))


def write_trajectories(scenario, record, output, scale=None):
    """Write ``record``'s trajectories to ``output`` (a path or a binary stream); the ``EpisodeMetrics``.

    ``scenario`` is anything ``compile_scenario`` takes, ``record`` anything
    the engine reads (a path, ``.gz``/``.zst``, a binary file or pipe,
    bytes, an iterable of byte chunks), ``scale`` a ``Scale`` (default: 0.4
    m cells, 0.3 s steps).  A record that fails validation raises
    ``MetricsInputError``; a path is then left as it was.
    """
    scale = Scale() if scale is None else scale
    compiled = compile_scenario(scenario)
    if hasattr(output, "write"):
        return _stream(compiled, record, scale, output)
    with output_file(output) as stream:
        return _stream(compiled, record, scale, stream)


def _stream(compiled, record, scale, stream):
    writer = TrajectoryWriter(compiled, scale, stream)
    metrics = measure_record(compiled, record, on_state=writer.add)
    writer.finish()
    return metrics
