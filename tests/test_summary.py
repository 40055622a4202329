"""Metric summaries and tables (ember.summary): without the cli extra's tabulate, a one-line error."""

import io
import json
import sys

import pytest

import ember
from ember.cli import main

from helpers.scenarios import picture_scenario

SCENARIO = picture_scenario(["A....", ".#.#.", "B...1"], ignitions=[(0, 4)], max_steps=30, p="1/3")


@pytest.fixture(scope="module")
def record():
    data = io.BytesIO()
    ember.run_episode(SCENARIO, "greedy", 3, data)
    return data.getvalue()


def test_without_tabulate_format_table_is_a_one_line_error(monkeypatch, tmp_path, record, capsys):
    from ember import summary

    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(SCENARIO))
    record_file = tmp_path / "x.record"
    record_file.write_bytes(record)
    out = tmp_path / "m.txt"
    assert main(["metrics", str(scenario_file), str(record_file), "--format", "table"]) == 0
    table = capsys.readouterr().out
    assert table == summary.format_metrics_tables(ember.episode_metrics(SCENARIO, record).to_dict())
    monkeypatch.setitem(sys.modules, "tabulate", None)  # makes 'from tabulate import ...' fail
    assert main(["metrics", str(scenario_file), str(record_file), "--format", "table", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err
        == "ember: --format table needs tabulate: pip install 'ember-eval[cli]' (or pip install tabulate).\n"
    )
    assert not out.exists()
    with pytest.raises(ember.EmberError, match=r"ember-eval\[cli\]") as info:
        summary.format_table(("a",), [[1]])
    assert isinstance(info.value, ImportError)
