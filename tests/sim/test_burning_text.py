"""``BurningText.size`` and ``occurs_at``: the replay's in-place comparison of a step's burning list.

The replay compares a line's burning list with the simulator's kept text
row by row, without joining it; that must say exactly what comparing with
the joined text (``json()``, itself tested against ``canonical_json`` in
test_sorted_cells.py) says, after every batch of new cells, for the text in
place and for bytes that differ from it anywhere.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.sim.simulator import BurningText


@st.composite
def batches(draw):
    rows, cols = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    cells = draw(st.permutations(range(rows * cols)))
    cut = sorted(draw(st.lists(st.integers(0, len(cells)), max_size=6)))
    bounds = [0, *cut, draw(st.integers(cut[-1] if cut else 0, len(cells)))]
    groups = [sorted(cells[a:b]) for a, b in zip(bounds, bounds[1:])]
    return cols, groups


def variants(text):
    """Bytes that differ from ``text`` in one place: each byte changed, one dropped, one added."""
    out = [text + b"]", text[:-1], b"[" + text, text.replace(b",", b", ", 1)]
    for i in range(len(text)):
        out.append(text[:i] + (b"9" if text[i : i + 1] != b"9" else b"8") + text[i + 1 :])
        out.append(text[:i] + text[i + 1 :])
    return [v for v in out if v != text]


@settings(max_examples=300, deadline=None)
@given(batches(), st.binary(max_size=3), st.binary(max_size=3))
def test_the_comparison_in_place_is_the_comparison_with_the_joined_text(case, before, after):
    cols, groups = case
    kept = BurningText(groups[0], cols)
    for group in groups[1:] + [[]]:
        text = kept.json()
        assert kept.size == len(text)
        assert kept.occurs_at(before + text + after, len(before))
        for other in variants(text):
            data = before + other + after
            # What the replay asks: does the list's text stand at this offset (its length checked apart)?
            joined = data[len(before) : len(before) + len(text)] == text
            assert kept.occurs_at(data, len(before)) is joined
        kept.add(group)
