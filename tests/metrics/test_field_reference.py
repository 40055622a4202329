"""docs/spec/metrics.md, the project's field reference, names exactly the fields of ``to_dict()``, by family."""

import io
import re
from pathlib import Path

import pytest

import ember

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "spec" / "metrics.md"
HEADING = re.compile(r"^## (\d+)\. .*?\(`(\w+)`", re.MULTILINE)
FIELD_ROW = re.compile(r"^\| `(\w+)` \|", re.MULTILINE)


def _documented():
    """{family: the fields of the first column of its section's tables}, by the (`family`) of each heading."""
    text = REFERENCE.read_text(encoding="utf-8")
    fields = {}
    for heading in HEADING.finditer(text):
        end = text.find("\n## ", heading.end())
        fields[heading[2]] = set(FIELD_ROW.findall(text, heading.end(), end if end >= 0 else len(text)))
    return fields


@pytest.fixture(scope="module")
def metrics():
    # Every key is present in every episode (null where undefined), so one small episode shows them all.
    out = io.BytesIO()
    ember.run_episode("builtin:small-room", "greedy", 3, out)
    return ember.episode_metrics("builtin:small-room", out.getvalue()).to_dict()


def test_every_family_has_its_section():
    families = _documented()
    expected = {"safety", "time", "movement", "path_efficiency", "fire_exposure", "exits", "replanning", "people"}
    assert set(families) == expected


@pytest.mark.parametrize("family", ["safety", "time", "movement", "path_efficiency", "fire_exposure", "exits"])
def test_a_family_documents_exactly_its_output_fields(metrics, family):
    assert _documented()[family] == set(metrics[family])


def test_replanning_documents_exactly_its_output_fields(metrics):
    assert _documented()["replanning"] == set(metrics["replanning"])


def test_the_per_person_table_documents_exactly_a_person_object(metrics):
    person = next(iter(metrics["people"].values()))
    assert _documented()["people"] == set(person)


def test_the_top_level_keys_are_the_families_and_the_episode(metrics):
    assert set(metrics) == set(_documented()) | {"metrics_version", "scenario_id", "scenario_hash", "seed"}
