"""Pictures of an episode: a PNG still, an animated GIF, or ASCII text.

The record is read once, as a stream, through the same engine as
``episode_metrics`` (stage 1 and 2 checks and the replay), and the frames
are taken from the snapshots as they pass.  Nothing is written until the
whole record has been validated: a picture is only ever drawn of a record
that ``ember metrics`` accepts.

Every frame is first drawn at one byte per cell in two layers, the ground
(floor, wall, exit, fire) and the people (by status), which is all the GIF
keeps per sampled frame; pixels are made only when the image is written.
A person is a square inset in its cell, so the ground (an exit, the fire)
stays visible around it.  Under the grid a band names the frame's step
and shows a legend of the colours (``Legend``); its text is drawn without
anti-aliasing, so an image holds only the palette's colours.  Pillow (the
``viz`` extra) is imported only to write images; ASCII needs nothing.
"""

import os

from .engine.read import measure_record
from .errors import RenderError
from .files import write_atomically
from .scenario import compile_scenario

# Ground codes, then people codes; a higher people code wins a shared cell
# (resolved people may share one, simulator.md §3).
FLOOR, WALL, EXIT, FIRE = 0, 1, 2, 3
NOBODY, EVACUATED, CASUALTY, ACTIVE, TRAPPED = 0, 1, 2, 3, 4

#: RGB colours of the images (listed in ``ember render --help`` too).
PALETTE = {
    "floor": (245, 245, 240),
    "wall": (60, 60, 60),
    "exit": (40, 160, 70),
    "fire": (235, 80, 20),
    "evacuated": (120, 215, 235),
    "casualty": (0, 0, 0),
    "active": (30, 90, 220),
    "trapped": (200, 40, 200),
}
#: What the legend under an image calls each colour, in its order.
LEGEND = {
    "active": "person",
    "trapped": "trapped (no path out)",
    "evacuated": "evacuated",
    "casualty": "casualty",
    "fire": "fire",
    "exit": "exit",
    "wall": "wall",
    "floor": "floor",
}
#: The band under the grid (the step label, then the legend): its background and its text.
BAND_COLOUR = (255, 255, 255)
TEXT_COLOUR = (20, 20, 20)
_GROUND_NAMES = ("floor", "wall", "exit", "fire")
_PEOPLE_NAMES = (None, "evacuated", "casualty", "active", "trapped")
ASCII = {
    "floor": ".",
    "wall": "#",
    "exit": "E",
    "fire": "*",
    "evacuated": "e",
    "casualty": "x",
    "active": "@",
    "trapped": "T",
}

MAX_GIF_FRAMES = 500
#: Pillow holds every GIF frame at full size while it encodes the file.
MAX_GIF_PIXELS = 200_000_000
MAX_IMAGE_PIXELS = 64_000_000
MAX_CELL_SIZE = 64
FRAME_MS = 120
LAST_FRAME_MS = 2000
_DEFAULT_IMAGE_SIDE = 960
_DEFAULT_CELL_SIZE = 12


def default_cell_size(rows, cols):
    """12 px, less for big grids so that the image stays about 960 px on its longer side."""
    return max(1, min(_DEFAULT_CELL_SIZE, _DEFAULT_IMAGE_SIDE // max(rows, cols)))


# --- one frame at one byte per cell ------------------------------------------------


class Board:
    """The static ground of a scenario, and frames (ground, people) of its snapshots."""

    def __init__(self, compiled):
        self.grid = grid = compiled.grid
        self.rows, self.cols = grid.rows, grid.cols
        self.ground = bytearray(grid.size)  # FLOOR
        for cell in grid.walls:
            self.ground[cell] = WALL
        for cell in compiled.exit_cells:
            self.ground[cell] = EXIT

    def frame(self, snapshot):
        """(ground, people) bytearrays for a snapshot of a validated record."""
        index = self.grid.index
        ground = bytearray(self.ground)
        for row, col in snapshot["burning"]:
            ground[index(row, col)] = FIRE
        people = bytearray(self.grid.size)
        trapped = set(snapshot["trapped"])
        for person in snapshot["people"]:
            status = person["status"]
            if status == "active":
                code = TRAPPED if person["person_id"] in trapped else ACTIVE
            else:
                code = EVACUATED if status == "evacuated" else CASUALTY
            cell = index(*person["position"])
            if code > people[cell]:
                people[cell] = code
        return bytes(ground), bytes(people)

    def ascii(self, frame):
        """The frame as text, one line per row (see ``ASCII``)."""
        ground, people = frame
        chars = [ASCII[_PEOPLE_NAMES[p]] if p else ASCII[_GROUND_NAMES[g]] for g, p in zip(ground, people)]
        cols = self.cols
        return "\n".join("".join(chars[r * cols : (r + 1) * cols]) for r in range(self.rows))


# --- collecting frames while the record streams --------------------------------------


class StillCollector:
    """Keeps the frame of one step (``None``: the last one)."""

    def __init__(self, board, step=None):
        self.board = board
        self.wanted = step
        self.snapshot = None
        self.last_step = 0

    def add(self, t, snapshot):
        self.last_step = t
        if self.wanted is None or t == self.wanted:
            self.snapshot = snapshot  # the parser built it for us; keeping it costs nothing

    def result(self):
        if self.wanted is not None and self.wanted > self.last_step:
            raise RenderError(f"--step {self.wanted}: the record has only {self.last_step} steps.")
        return self.board.frame(self.snapshot)

    def step(self):
        """The step of the kept frame (after ``result``)."""
        return self.last_step if self.wanted is None else self.wanted


class FrameSampler:
    """Keeps at most ``limit`` evenly spaced frames of a record of unknown length, plus the last.

    Frames are kept every ``stride`` steps; when there would be more than
    ``limit`` of them, the stride doubles and every other kept frame goes.
    The last snapshot is always shown, so the animation ends on the outcome.
    """

    def __init__(self, board, limit=MAX_GIF_FRAMES):
        self.board = board
        self.limit = max(1, limit - 1)  # one place is the last frame's
        self.stride = 1
        self.frames = []  # (step, frame)
        self.last = None  # (step, snapshot)

    def add(self, t, snapshot):
        self.last = (t, snapshot)
        if t % self.stride:
            return
        self.frames.append((t, self.board.frame(snapshot)))
        if len(self.frames) > self.limit:
            self.stride *= 2
            self.frames = [(s, f) for s, f in self.frames if s % self.stride == 0]

    def result(self):
        t, snapshot = self.last
        frames = [frame for _, frame in self.frames]
        if not self.frames or self.frames[-1][0] != t:
            frames.append(self.board.frame(snapshot))
        return frames

    def steps(self):
        """The step of each frame of ``result``, in order."""
        t = self.last[0]
        steps = [step for step, _ in self.frames]
        return steps if steps and steps[-1] == t else [*steps, t]


def collect(compiled, record, collector):
    """Stream ``record`` through validation into ``collector``; raise on any defect.

    The engine's entry point with its fast path; the collector sees each
    state once its transition has passed the checks.
    """
    measure_record(compiled, record, on_state=collector.add)
    return collector.result()


# --- the public entry points ----------------------------------------------------------


def render_ascii(scenario, record, step=None):
    """The text picture of one step (default: the last) of a validated record."""
    compiled = compile_scenario(scenario)
    board = Board(compiled)
    return board.ascii(collect(compiled, record, StillCollector(board, step)))


def render_image(scenario, record, path, step=None, cell_size=None):
    """Write a PNG still (``.png``) or an animated GIF of every step (``.gif``) to ``path``.

    Returns the number of frames drawn (1 for a PNG).  Each image names its
    step under the grid, so no two frames of a GIF are identical and the
    encoder keeps them all.
    """
    kind = _image_kind(path)
    if kind == "gif" and step is not None:
        raise RenderError("--step selects a PNG still; a GIF shows the whole episode.")
    pillow = _pillow()
    compiled = compile_scenario(scenario)
    board = Board(compiled)
    painter = Painter(pillow, board, cell_size or default_cell_size(board.rows, board.cols))
    if kind == "png":
        still = StillCollector(board, step)
        frame = collect(compiled, record, still)
        label = step_label(still.step(), still.last_step)
        _save_atomically(path, lambda out: painter.paint(frame, label).save(out, format="PNG"))
        return 1
    limit = min(MAX_GIF_FRAMES, max(2, MAX_GIF_PIXELS // painter.pixels))
    sampler = FrameSampler(board, limit)
    frames = collect(compiled, record, sampler)
    steps = sampler.steps()
    labels = [step_label(t, steps[-1]) for t in steps]
    durations = [FRAME_MS] * (len(frames) - 1) + [LAST_FRAME_MS]

    def save(out):
        # Painted lazily, but Pillow keeps every painted frame until the file is
        # written: hence the MAX_GIF_PIXELS bound on the number of frames.
        images = (painter.paint(frame, label) for frame, label in zip(frames, labels))
        first = next(images)
        first.save(out, format="GIF", save_all=True, append_images=images, duration=durations, loop=0)

    _save_atomically(path, save)
    return len(frames)


def step_label(step, last):
    """The label under a frame: ``step 12 of 26`` (``last``: the record's last step)."""
    return f"step {step:,} of {last:,}"


def _save_atomically(path, save):
    """Write through a temporary file, so ``path`` never holds a half-written image."""
    try:
        write_atomically(path, save)
    except OSError as exc:
        raise RenderError(f"cannot write {os.fspath(path)!r}: {exc.strerror or exc}.") from exc


def _image_kind(path):
    name = str(path).lower()
    for kind in ("png", "gif"):
        if name.endswith("." + kind):
            return kind
    raise RenderError(f"the output {str(path)!r} must end in .png (a still) or .gif (an animation).")


def _pillow():
    """Pillow's Image, ImageChops, ImageDraw and ImageFont modules, or a RenderError telling how to install them."""
    try:
        from PIL import Image, ImageChops, ImageDraw, ImageFont
    except ImportError:
        raise RenderError(
            "writing images needs Pillow: pip install 'ember-eval[viz]' (or pip install Pillow); "
            "--ascii prints the grid as text without it."
        ) from None
    return Image, ImageChops, ImageDraw, ImageFont


#: Palette entries of the band under the grid, after the eight colours of the grid.
_BAND, _TEXT = 8, 9
_PAD = 4
#: The longest label drawn (``step_label`` of the longest horizon): the band is made wide enough for it.
_WIDEST_LABEL = "step 2,147,483,647 of 2,147,483,647"


class Legend:
    """The band under the grid: a line for the step label, then the legend (a swatch and a name per colour).

    Laid out once for the image; ``template`` is the band with the legend drawn, in palette
    indices (text without anti-aliasing, so that every pixel is one of the palette's entries);
    ``swatches`` maps each colour's name to its swatch's box in the band, ``label_box`` is the
    box the step label is drawn in, anew for each frame.
    """

    def __init__(self, pillow, grid_width, index_of):
        Image, _, self.ImageDraw, ImageFont = pillow
        self.font = font = ImageFont.load_default()
        _, top, _, bottom = font.getbbox("Ag")
        line = bottom + _PAD  # a line of text from its origin, and a gap
        swatch = bottom - top
        items = [(name, text, font.getbbox(text)[2]) for name, text in LEGEND.items()]
        widest = max(swatch + _PAD + width for _, _, width in items)
        self.width = max(grid_width, widest + 2 * _PAD, font.getbbox(_WIDEST_LABEL)[2] + 2 * _PAD)
        self.label_box = (0, 0, self.width, _PAD + line)
        placed, x, y = [], _PAD, _PAD + line  # the label's line comes first
        for name, text, width in items:
            if x > _PAD and x + swatch + _PAD + width > self.width - _PAD:
                x, y = _PAD, y + line
            placed.append((name, text, x, y))
            x += swatch + _PAD + width + 3 * _PAD
        self.height = y + line
        self.template = Image.new("L", (self.width, self.height), _BAND)
        draw = self._draw(self.template)
        self.swatches = {}
        for name, text, x, y in placed:
            box = (x, y + top, x + swatch - 1, y + bottom - 1)
            # Outlined in the wall's colour: the floor's swatch shows against the band too.
            draw.rectangle(box, fill=index_of[name], outline=index_of["wall"])
            draw.text((x + swatch + _PAD, y), text, font=font, fill=_TEXT)
            self.swatches[name] = box

    def _draw(self, image):
        draw = self.ImageDraw.Draw(image)
        draw.fontmode = "1"  # no anti-aliasing: text pixels are the text's entry, nothing in between
        return draw

    def band(self, label):
        """The band with ``label`` drawn in its first line."""
        band = self.template.copy()
        self._draw(band).text((_PAD, _PAD), label, font=self.font, fill=_TEXT)
        return band


class Painter:
    """Turns (ground, people) frames into palette images: the grid, ``cell_size`` pixels per cell, and
    under it the band of ``Legend`` (the frame's step and what each colour is)."""

    def __init__(self, pillow, board, cell_size):
        if not 1 <= cell_size <= MAX_CELL_SIZE:
            raise RenderError(f"--cell-size must be between 1 and {MAX_CELL_SIZE}, got {cell_size}.")
        self.Image, self.ImageChops = pillow[:2]
        self.board = board
        self.cell = cell_size
        self.grid_size = (board.cols * cell_size, board.rows * cell_size)
        names = _GROUND_NAMES + _PEOPLE_NAMES[1:]
        index_of = {name: index for index, name in enumerate(names)}
        self.palette = [channel for name in names for channel in PALETTE[name]] + [*BAND_COLOUR, *TEXT_COLOUR]
        self.legend = Legend(pillow, self.grid_size[0], index_of)
        self.size = (self.legend.width, self.grid_size[1] + self.legend.height)
        self.pixels = self.size[0] * self.size[1]
        if self.pixels > MAX_IMAGE_PIXELS:
            raise RenderError(f"the image would be {self.size[0]}x{self.size[1]} pixels; choose a smaller --cell-size.")
        # People codes 1..4 are palette entries 4..7, after the ground's.
        offset = len(_GROUND_NAMES) - 1
        self.people_lut = [0] + [offset + code for code in range(1, len(_PEOPLE_NAMES))]
        self.people_lut += [0] * (256 - len(self.people_lut))
        self.inset = self._inset_mask()

    def _inset_mask(self):
        """A grid-size mask that is 255 inside each cell's inset square (None: no inset)."""
        cell = self.cell
        margin = cell // 6 if cell >= 4 else 0
        if not margin:
            return None
        Image = self.Image
        tile = Image.new("L", (cell, cell), 0)
        tile.paste(255, (margin, margin, cell - margin, cell - margin))
        # A row of tiles, then rows of rows: O(rows + cols) pastes, not O(cells).
        strip = Image.new("L", (self.grid_size[0], cell), 0)
        for col in range(self.board.cols):
            strip.paste(tile, (col * cell, 0))
        mask = Image.new("L", self.grid_size, 0)
        for row in range(self.board.rows):
            mask.paste(strip, (0, row * cell))
        return mask

    def _scaled(self, data):
        small = self.Image.frombytes("L", (self.board.cols, self.board.rows), data)
        return small.resize(self.grid_size, self.Image.NEAREST) if self.cell > 1 else small

    def paint(self, frame, label):
        """The image of ``frame``: the grid at the top left, the band with ``label`` (``step_label``) under it."""
        ground, people = frame
        grid = self._scaled(ground)
        if any(people):
            persons = self._scaled(people)
            present = persons.point([0] + [255] * 255)
            if self.inset is not None:
                present = self.ImageChops.multiply(present, self.inset)
            grid.paste(persons.point(self.people_lut), (0, 0), present)
        image = self.Image.new("L", self.size, _BAND)  # right of a grid narrower than the band: the band's colour
        image.paste(grid, (0, 0))
        image.paste(self.legend.band(label), (0, self.grid_size[1]))
        image.putpalette(self.palette)
        return image
