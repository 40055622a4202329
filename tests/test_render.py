"""ember render: PNG stills, GIF animations and ASCII of validated records."""

import json
import sys

import pytest

import ember
from ember import render
from ember.cli import main

from helpers.records import scripted
from helpers.scenarios import picture_scenario

FLOOR, WALL, EXIT, FIRE = (245, 245, 240), (60, 60, 60), (40, 160, 70), (235, 80, 20)
EVACUATED, CASUALTY, ACTIVE, TRAPPED = (120, 215, 235), (0, 0, 0), (30, 90, 220), (200, 40, 200)

# Every kind of cell and person: b walks out through exit e1 at step 1, d
# walks into the fire, c is walled in behind the fire (trapped), a stays.
ALL_KINDS = [
    "########",
    "#a...b1#",
    "#.d*...#",
    "###c####",
    "########",
]
ALL_KINDS_PLAN = [{"b": "east", "d": "east"}]

# b and then a walk to the exit, one cell a step: every frame differs.
CORRIDOR = [
    "#####",
    "#a.b1",
    "#*..#",
    "#####",
]


def write_episode(tmp_path, picture, policy, max_steps):
    scenario = picture_scenario(picture, max_steps=max_steps)
    sc_path, record = tmp_path / "scenario.json", tmp_path / "episode.record"
    sc_path.write_text(json.dumps(scenario))
    ember.run_episode(scenario, policy, 0, str(record))
    return str(sc_path), str(record)


@pytest.fixture
def all_kinds(tmp_path):
    return write_episode(tmp_path, ALL_KINDS, scripted(ALL_KINDS_PLAN), max_steps=2)


@pytest.fixture
def corridor(tmp_path):
    return write_episode(tmp_path, CORRIDOR, "greedy", max_steps=10)


def run_cli(capsys, *args):
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_ascii_of_the_last_and_the_first_step(capsys, all_kinds):
    status, out, err = run_cli(capsys, "render", *all_kinds, "--ascii")
    assert (status, err) == (0, "")
    assert out == "\n".join(["########", "#@....e#", "#..x...#", "###T####", "########"]) + "\n"
    status, out, _ = run_cli(capsys, "render", *all_kinds, "--ascii", "--step", "0")
    assert status == 0
    assert out == "\n".join(["########", "#@...@E#", "#.@*...#", "###T####", "########"]) + "\n"


def pixel(image, row, col, cell, dx=None, dy=None):
    """RGB of a cell's centre (or of the offset dx, dy inside it)."""
    x = col * cell + (cell // 2 if dx is None else dx)
    y = row * cell + (cell // 2 if dy is None else dy)
    return image.convert("RGB").getpixel((x, y))


def test_png_still_size_and_colours(capsys, tmp_path, all_kinds):
    Image = pytest.importorskip("PIL.Image")  # skips only where Pillow is absent; CI has the viz extra

    out = tmp_path / "last.png"
    status, stdout, err = run_cli(capsys, "render", *all_kinds, "-o", out, "--cell-size", 10)
    assert (status, stdout) == (0, "")
    assert err == f"ember: wrote {out} (1 frame).\n"
    image = Image.open(out)
    assert image.format == "PNG"
    # The grid (cols * cell, rows * cell) at the top left, the band of the step and the legend under it.
    assert image.size[0] >= 8 * 10 and image.size[1] > 5 * 10
    assert pixel(image, 0, 0, 10) == WALL
    assert pixel(image, 1, 2, 10) == FLOOR
    assert pixel(image, 1, 1, 10) == ACTIVE
    assert pixel(image, 1, 1, 10, dx=0, dy=0) == FLOOR  # a person is inset in its cell
    assert pixel(image, 1, 6, 10) == EVACUATED
    assert pixel(image, 1, 6, 10, dx=0, dy=0) == EXIT  # the exit shows around its evacuee
    assert pixel(image, 2, 3, 10) == CASUALTY
    assert pixel(image, 2, 3, 10, dx=0, dy=0) == FIRE
    assert pixel(image, 3, 3, 10) == TRAPPED

    status, _, _ = run_cli(capsys, "render", *all_kinds, "-o", tmp_path / "first.png", "--step", 0, "--cell-size", 10)
    first = Image.open(tmp_path / "first.png")
    assert status == 0
    assert pixel(first, 1, 6, 10) == EXIT
    assert pixel(first, 2, 3, 10) == FIRE
    assert pixel(first, 1, 5, 10) == ACTIVE


def test_gif_has_a_frame_per_step(capsys, tmp_path, corridor):
    Image = pytest.importorskip("PIL.Image")

    out = tmp_path / "episode.gif"
    status, _, err = run_cli(capsys, "render", *corridor, "-o", out, "--cell-size", 6)
    assert status == 0
    steps = ember.episode_metrics(corridor[0], corridor[1])["time"]["episode_steps"]
    assert steps == 3
    assert err == f"ember: wrote {out} (4 frames).\n"
    gif = Image.open(out)
    assert gif.format == "GIF"
    assert gif.size[0] >= 5 * 6 and gif.size[1] > 4 * 6
    assert gif.n_frames == steps + 1
    gif.seek(0)
    assert pixel(gif, 1, 1, 6) == ACTIVE and pixel(gif, 2, 1, 6) == FIRE and pixel(gif, 0, 0, 6) == WALL
    gif.seek(steps)
    assert pixel(gif, 1, 1, 6) == FLOOR and pixel(gif, 1, 4, 6) == EVACUATED


def test_long_gif_is_sampled(capsys, tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")

    picture = ["#" * 42, "#a" + "." * 38 + "1#", "#" * 42]
    sc, record = write_episode(tmp_path, picture, "greedy", max_steps=100)
    monkeypatch.setattr(render, "MAX_GIF_FRAMES", 8)
    out = tmp_path / "long.gif"
    assert run_cli(capsys, "render", sc, record, "-o", out, "--cell-size", 2)[0] == 0
    gif = Image.open(out)
    # 40 frames for at most 8: the stride doubles to 8, giving steps 0, 8, 16, 24, 32 and the last, 39.
    assert gif.n_frames == 6
    gif.seek(gif.n_frames - 1)
    assert pixel(gif, 1, 40, 2) == EVACUATED


def test_frame_sampler_keeps_evenly_spaced_frames_and_the_last():
    class Board:
        def frame(self, snapshot):
            return snapshot

    for steps in (0, 1, 9, 10, 11, 1000, 4097):
        sampler = render.FrameSampler(Board(), limit=10)
        for t in range(steps + 1):
            sampler.add(t, t)
        frames = sampler.result()
        assert len(frames) <= 10
        assert frames[0] == 0 and frames[-1] == steps
        gaps = {b - a for a, b in zip(frames[:-2], frames[1:-1])}
        assert len(gaps) <= 1  # evenly spaced, but for the final frame
        assert steps < 10 or len(frames) >= 5  # and not needlessly sparse


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "x.gif", "--step", "1"], "ember: --step selects a PNG still; a GIF shows the whole episode."),
        (["-o", "x.jpg"], "ember: the output 'x.jpg' must end in .png (a still) or .gif (an animation)."),
        (["--ascii", "--step", "3"], "ember: --step 3: the record has only 2 steps."),
        (["--ascii", "--cell-size", "3"], "ember: --cell-size applies only to images, not to --ascii."),
        (
            ["-o", "x.png", "--cell-size", "0"],
            "ember: argument --cell-size: the cell size must be an integer from 1 to 64 pixels, got '0' (see 'ember render --help').",  # noqa: E501 - whole message, greppable
        ),
        ([], "ember: one of the arguments -o/--output --ascii is required (see 'ember render --help')."),
    ],
)
def test_render_option_errors(capsys, tmp_path, monkeypatch, all_kinds, args, message):
    monkeypatch.chdir(tmp_path)
    try:
        status, out, err = run_cli(capsys, "render", *all_kinds, *args)
    except SystemExit as exc:  # argparse errors exit from inside main
        status, (out, err) = exc.code, capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == message + "\n"
    assert not list(tmp_path.glob("x.*"))


def test_render_refuses_an_invalid_record_and_writes_nothing(capsys, tmp_path, all_kinds):
    pytest.importorskip("PIL.Image")
    sc, record = all_kinds
    with open(record, "rb") as handle:
        data = handle.read()
    truncated = tmp_path / "truncated.record"
    truncated.write_bytes(data[: len(data) - 40])
    out = tmp_path / "bad.png"
    status, stdout, err = run_cli(capsys, "render", sc, truncated, "-o", out)
    assert (status, stdout) == (2, "")
    assert err.startswith("ember: ") and err.count("\n") == 1 and "truncated" in err
    assert not out.exists() and not list(tmp_path.glob("bad.png*"))
    # A record of another scenario (here, one fewer person) fails its header check.
    other = tmp_path / "other.json"
    other.write_text(json.dumps(picture_scenario([row.replace("a", ".") for row in ALL_KINDS], max_steps=2)))
    status, _, err = run_cli(capsys, "render", other, record, "--ascii")
    assert status == 2 and err.count("\n") == 1


def test_without_pillow_images_are_refused_with_install_advice(capsys, tmp_path, monkeypatch, all_kinds):
    monkeypatch.setitem(sys.modules, "PIL", None)  # makes 'from PIL import ...' fail
    status, out, err = run_cli(capsys, "render", *all_kinds, "-o", tmp_path / "x.png")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "pip install 'ember-eval[viz]'" in err and "--ascii" in err
    status, out, _ = run_cli(capsys, "render", *all_kinds, "--ascii")
    assert status == 0 and out.startswith("########\n")


def test_default_cell_size_keeps_big_grids_reasonable():
    assert render.default_cell_size(5, 8) == 12
    assert render.default_cell_size(200, 200) == 4
    assert render.default_cell_size(4096, 10) == 1


# --- the band under the grid: the step and the legend ---------------------------------------------


def band_of(image, grid_height):
    """The part of an image under its grid, in RGB."""
    rgb = image.convert("RGB")
    return rgb.crop((0, grid_height, rgb.size[0], rgb.size[1]))


def colours_in(image):
    return {colour for _, colour in image.getcolors(image.size[0] * image.size[1])}


def test_a_still_has_a_legend_of_every_colour_under_the_grid(capsys, tmp_path, all_kinds):
    Image = pytest.importorskip("PIL.Image")

    out = tmp_path / "still.png"
    assert run_cli(capsys, "render", *all_kinds, "-o", out, "--cell-size", 10)[0] == 0
    image = Image.open(out)
    band = band_of(image, 5 * 10)
    assert band.size[1] > 20  # a line for the step and at least one for the legend
    # Every colour of the grid has its swatch in the band, and the names and the step are drawn in the text colour.
    assert set(render.PALETTE.values()) | {render.TEXT_COLOUR, render.BAND_COLOUR} == colours_in(band)
    # The text is drawn without anti-aliasing: the band has no colour but the palette's (the set above).
    from PIL import ImageChops, ImageDraw, ImageFont

    names = ("floor", "wall", "exit", "fire", "evacuated", "casualty", "active", "trapped")
    index_of = {name: i for i, name in enumerate(names)}
    legend = render.Legend((Image, ImageChops, ImageDraw, ImageFont), 8 * 10, index_of)
    assert image.size == (legend.width, 5 * 10 + legend.height)
    for name, (left, top, right, bottom) in legend.swatches.items():
        inside = band.getpixel(((left + right) // 2, (top + bottom) // 2))
        assert inside == render.PALETTE[name], name
        assert band.getpixel((left, top)) == render.PALETTE["wall"]  # outlined, so the floor's swatch shows


def test_each_still_and_each_gif_frame_names_its_step(capsys, tmp_path, corridor):
    Image = pytest.importorskip("PIL.Image")
    from PIL import ImageChops

    stills = []
    for step in (0, 1, 1):
        out = tmp_path / f"still-{len(stills)}.png"
        assert run_cli(capsys, "render", *corridor, "-o", out, "--step", step, "--cell-size", 6)[0] == 0
        stills.append(band_of(Image.open(out), 4 * 6))
    assert ImageChops.difference(stills[1], stills[2]).getbbox() is None  # the same step: the same band
    changed = ImageChops.difference(stills[0], stills[1]).getbbox()
    assert changed is not None
    label_height = next(y for y in range(stills[0].size[1]) if render.PALETTE["wall"] in colours_in(
        stills[0].crop((0, y, stills[0].size[0], y + 1))))  # fmt: skip
    assert changed[3] <= label_height  # only the step label's line differs: the legend is the same
    assert render.TEXT_COLOUR in colours_in(stills[0].crop((0, 0, stills[0].size[0], label_height)))

    out = tmp_path / "episode.gif"
    assert run_cli(capsys, "render", *corridor, "-o", out, "--cell-size", 6)[0] == 0
    gif = Image.open(out)
    bands = []
    for frame in range(gif.n_frames):
        gif.seek(frame)
        bands.append(band_of(gif, 4 * 6))
    assert ImageChops.difference(bands[0], stills[0]).getbbox() is None  # frame 0 is labelled as step 0's still
    for before, after in zip(bands, bands[1:]):
        changed = ImageChops.difference(before, after).getbbox()
        assert changed is not None and changed[3] <= label_height


def test_step_labels_name_the_step_and_the_last():
    assert render.step_label(0, 3) == "step 0 of 3"
    assert render.step_label(1234, 2**31 - 1) == "step 1,234 of 2,147,483,647"
