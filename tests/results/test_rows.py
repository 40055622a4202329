"""The one row constructor (results/rows.py): foreign text in a failed row's reason is escaped.

isolation.md §3: C0 controls, DEL and C1 controls become ``\\xNN``;
U+2028, U+2029, U+202A–U+202E and U+2066–U+2069 become ``\\uNNNN``.  A
python policy's exception with ESC and BEL in it reaches neither the
terminal (``evaluate``) nor ``ember export`` raw.
"""

import pytest

from ember.results.rows import MAX_REASON_CHARS, failed_row, ok_row, reason_line

from helpers.campaigns import ember_cli, read_rows, write_campaign

FIELDS = {"scenario_id": "s", "scenario_hash": "sha256:" + "0" * 64, "seed": 3, "policy": "p"}
CONTROLS = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
MARKS = [chr(c) for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]


@pytest.mark.parametrize("char", CONTROLS + MARKS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_and_mark_is_escaped_or_was_whitespace(char):
    reason = reason_line(f"a{char}b")
    assert char not in reason
    if char.isspace():  # a whitespace run is one space: the reason is one line
        assert reason == "a b"
    elif ord(char) < 0x100:
        assert reason == f"a\\x{ord(char):02x}b"
    else:
        assert reason == f"a\\u{ord(char):04x}b"


def test_plain_text_is_unchanged_and_cut_at_the_limit():
    assert reason_line("  step 3:\tthe agent\nsaid é ") == "step 3: the agent said é"
    long = "x" * (MAX_REASON_CHARS + 10)
    assert reason_line(long) == "x" * (MAX_REASON_CHARS - 3) + "..."
    cut = reason_line("\x1b" * MAX_REASON_CHARS)
    assert len(cut) <= MAX_REASON_CHARS and cut.endswith("\\x1b...")  # never inside an escape


def test_ok_and_failed_rows_have_every_key():
    metrics = {"time": {"episode_steps": 7}}
    ok = ok_row(**FIELDS, metrics=metrics, record=None, record_sha256=None, elapsed_s=0.12345)
    failed = failed_row(**FIELDS, error="boom\x07", elapsed_s=1)
    assert ok == {**FIELDS, "status": "ok", "error": None, "metrics": metrics, "steps": 7, "record": None,
                  "record_sha256": None, "elapsed_s": 0.123}  # fmt: skip
    assert failed == {**FIELDS, "status": "failed", "error": "boom\\x07", "metrics": None, "steps": None,
                      "record": None, "record_sha256": None, "elapsed_s": 1.0}  # fmt: skip


CAMPAIGN = """
campaign = "escapes"
seeds = [0]
scenarios = ["tiny.json"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "loud"
python = "campaign_hooks:escapes"
"""


def test_a_python_policys_controls_reach_no_output_raw(tmp_path):
    path = write_campaign(tmp_path / "c", CAMPAIGN, hooks=True)
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1", timeout=300)
    assert done.returncode == 0, done.stderr
    exported = ember_cli("export", results, timeout=120)
    assert exported.returncode == 0, exported.stderr
    escaped = "step 1: the python policy raised RuntimeError: \\x1b[31mred\\x07 and \\u202ereversed"
    (row,) = [row for row in read_rows(results) if row["policy"] == "loud"]
    assert row["error"] == escaped
    assert escaped in exported.stdout.decode()
    for output in (done.stdout, done.stderr, exported.stdout, exported.stderr):
        assert not any(byte in output for byte in (b"\x1b", b"\x07", "\u202e".encode()))
