"""Exports for outside tools: trajectories (PedPy's text format and geometry)."""

import argparse
import contextlib
import os
import shutil
import tempfile

from . import arguments
from .outputs import record_source

TRAJECTORIES_EPILOG = (
    "Defaults from the floor-field cellular automaton (Burstedde et al., 2001): 0.4 m cells, the space of one "
    "person in a dense crowd, and 0.3 s steps, so one cell a step is about 1.3 m/s. "
    "Positions are cell centres: x = (col + 1/2) * cell, y = (rows - row - 1/2) * cell (north is up); frame t is "
    "step t, so the frame rate is 1 / step seconds; PedPy's id k is the k-th person in ID order (listed in the "
    "header). An evacuee is shown at its exit cell at its evacuation step and one frame more (PedPy drops the move "
    "into a trajectory's last frame), a casualty last at the step before. The record is validated and replayed as "
    "'ember metrics' does while it streams, in constant memory; nothing is written from a record that fails "
    "(on standard output, the file is complete before its first byte appears). "
    "--geometry writes JSON with WKT texts for pedpy.WalkableArea and pedpy.MeasurementLine, one line per way "
    "into each exit, so that pedpy.compute_n_t summed over an exit's lines counts its evacuations at their steps; "
    "it needs shapely: pip install 'ember-eval[analysis]'. See docs/interop.md."
)


def _scale_argument(check, what):
    def parse(text):
        from ..errors import InteropError

        try:
            return check(text, what)
        except InteropError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def trajectories_arguments(command):
    from ..interop.scale import DEFAULT_CELL_SIZE, DEFAULT_STEP_SECONDS, cell_size_metres, step_duration_seconds

    arguments.add_scenario_and_record(command)
    output_help = "the trajectory file to write, e.g. FILE.txt (without -o, or with -o -: standard output)"
    arguments.add_output(command, output_help, metavar="FILE")
    command.add_argument(
        "--cell-size",
        type=_scale_argument(cell_size_metres, "the cell size"),
        default=DEFAULT_CELL_SIZE,
        metavar="M",
        help=f"metres per grid cell (default: {DEFAULT_CELL_SIZE}, Burstedde et al., 2001)",
    )
    command.add_argument(
        "--step-seconds",
        type=_scale_argument(step_duration_seconds, "the step duration"),
        default=DEFAULT_STEP_SECONDS,
        metavar="S",
        help=f"seconds per step (default: {DEFAULT_STEP_SECONDS}, Burstedde et al., 2001)",
    )
    command.add_argument(
        "--geometry",
        type=arguments.output_path,
        metavar="FILE",
        help="also write the walkable area and the exits' measurement lines here (JSON of WKT texts)",
    )


def cmd_trajectories(args, console):
    from ..files import output_files
    from ..interop.geometry import geometry_document, write_geometry
    from ..interop.scale import Scale
    from ..interop.trajectories import write_trajectories
    from ..progress import reading_progress
    from ..scenario import compile_scenario

    to_stdout = args.output in (None, "-")
    if args.geometry == "-":
        return console.fail("--geometry needs a file name; standard output is for the trajectories.")
    if args.geometry is not None and not to_stdout and _same_file(args.geometry, args.output):
        return console.fail(f"--geometry and -o name the same file ({args.geometry}); give two different files.")
    scale = Scale(args.cell_size, args.step_seconds)
    compiled = compile_scenario(args.scenario)
    # The geometry needs the scenario only: made (or refused, without shapely) before the record is read.
    document = None if args.geometry is None else geometry_document(compiled, scale)
    # Both files are written together (files.output_files): neither is in place until both are complete, so a
    # failure of either (a bad record, a full disk, /dev/full) leaves nothing written.
    # On standard output the trajectories are spooled: complete (the record checked whole) before their first
    # byte is written, and written before the geometry file is put in place.
    paths = ([] if to_stdout else [args.output]) + ([] if document is None else [args.geometry])
    with contextlib.ExitStack() as stack:
        spool = stack.enter_context(tempfile.TemporaryFile()) if to_stdout else None

        def to_console():
            spool.seek(0)
            shutil.copyfileobj(spool, console.binary())
            console.flush()

        with output_files(*paths, last=to_console if to_stdout else None) as streams:
            if document is not None:
                write_geometry(document, streams[-1])
            with reading_progress(record_source(args.record), stream=console.progress_stream) as record:
                write_trajectories(compiled, record, spool if to_stdout else streams[0], scale)
    if not to_stdout:
        console.say(f"ember: wrote {args.output} ({scale.describe()}).")
    if document is not None:
        console.say(f"ember: wrote {args.geometry}.")
    return 0


def _same_file(first, second):
    return os.path.realpath(first) == os.path.realpath(second)
