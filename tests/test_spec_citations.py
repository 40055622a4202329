"""The contract inside the repository: every ``NAME.md §N`` the code and docs cite is a section of docs/spec/NAME.md.

A citation is ``NAME.md §N`` (or ``§N.M``), a range ``§N–M``, or a chain
``NAME.md §N, §M and §K`` (each member cites the same file).  A citation of
a file that is not in docs/spec/ fails too: a newcomer who clones the
repository must be able to read what the code cites.
"""

import re
from pathlib import Path

import pytest

from ember import versions

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "spec"

#: Where citations are read: the code, the docs (the spec's own cross-references included), the tests and scripts.
CITING = ("src", "docs", "tests", "benchmarks", "examples", "scripts", "README.md")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".html", ".sh"}

#: The eight documents this project wrote, copied into docs/spec/, and the version each states in its first line.
COPIES = {
    "simulator.md": versions.SIMULATOR_VERSION,
    "output.md": versions.METRICS_VERSION,
    "campaign.md": "1.1",
    "ranking.md": versions.RANKING_VERSION,
    "statistics.md": versions.STATISTICS_VERSION,
    "isolation.md": "1.1",
    "service.md": "1.1",
    "bounds.md": "1.0",
}

SECTION = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
NUMBER = r"\d+(?:\.\d+)*"
# NAME.md, then a section, a range, or a chain of them; a path before NAME.md must be docs/spec/ (or none).
CITATION = re.compile(
    rf"(?<![\w.-])(?P<path>[\w./-]*/)?(?P<name>[\w-]+\.md),?\s+§(?P<first>{NUMBER})"
    rf"(?P<rest>(?:\s*[–-]\s*§?{NUMBER}|(?:,| and| or)\s+§{NUMBER})*)"
)
FOLLOWING = re.compile(NUMBER)


def _sections(path):
    return set(SECTION.findall(path.read_text(encoding="utf-8")))


def _citing_files():
    for entry in CITING:
        path = ROOT / entry
        if path.is_file():
            yield path
            continue
        for found in sorted(path.rglob("*")):
            if found.is_file() and found.suffix in SUFFIXES and ".venv" not in found.parts:
                yield found


def citations():
    """(file, line, cited file name, section) for every citation of a spec section."""
    found = []
    for path in _citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in CITATION.finditer(text):
            prefix = match["path"]
            if prefix and not prefix.endswith("spec/"):
                continue  # another folder's NAME.md (docs/ranking.md is the project's guide, not the spec)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            for number in [match["first"], *FOLLOWING.findall(match["rest"])]:
                found.append((where, match["name"], number))
    return found


def test_the_citations_are_found():
    # The reader of citations itself: the code cites the spec about a hundred times (a regex that finds none
    # would make the next test pass on anything).
    cited = citations()
    assert len(cited) > 100
    assert {name for _, name, _ in cited} >= {"simulator.md", "metrics.md", "campaign.md", "ranking.md"}


def test_the_citation_reader_reads_ranges_and_chains(tmp_path):
    text = "x (simulator.md §3 rule 4, §5), metrics.md\n§6–7, campaign.md §1-2 and §4; docs/ranking.md §9; §8 alone"
    matches = [(m["name"], [m["first"], *FOLLOWING.findall(m["rest"])], m["path"]) for m in CITATION.finditer(text)]
    assert matches == [
        ("simulator.md", ["3"], None),
        ("metrics.md", ["6", "7"], None),
        ("campaign.md", ["1", "2", "4"], None),
        ("ranking.md", ["9"], "docs/"),
    ]


def test_every_cited_section_exists_in_docs_spec():
    sections = {path.name: _sections(path) for path in SPEC.glob("*.md")}
    missing = [
        f"{where}: {name} §{number}"
        for where, name, number in citations()
        if name not in sections or number not in sections[name]
    ]
    assert missing == []


@pytest.mark.parametrize("name", sorted(COPIES))
def test_each_copy_of_the_contract_is_there_with_its_version_line(name):
    first = (SPEC / name).read_text(encoding="utf-8").splitlines()[0]
    assert re.fullmatch(rf"# .+ — version {re.escape(COPIES[name])}", first), first
    assert _sections(SPEC / name) or name == "output.md"  # output.md is a list of names, without numbered sections


def test_the_metrics_reference_states_the_official_version_it_describes():
    text = (SPEC / "metrics.md").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# Metrics field reference — metrics version {versions.METRICS_VERSION}"
    assert "metrics-v1.0-original.txt" in text  # where the official text is
    # The official document's section numbers, so that every citation of metrics.md resolves here.
    assert _sections(SPEC / "metrics.md") == {str(n) for n in range(1, 15)}


# A named part of a project document: docs/decisions.md, "Scale" (or ("Output files")).
NAMED = re.compile(r'(?<![\w.-])(?P<path>[\w./-]*\.md),? \(?"(?P<title>[^"\n]{2,80})"')


def test_every_named_part_of_a_doc_is_a_heading_or_a_bold_entry_of_it():
    missing = []
    for path in _citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in NAMED.finditer(text):
            name = match["path"]
            target = ROOT / name if "/" in name else ROOT / "docs" / name
            cited = target.read_text(encoding="utf-8") if target.is_file() else ""
            title = re.escape(match["title"])
            if not re.search(rf"^#+ .*{title}|\*\*{title}", cited, re.MULTILINE):
                missing.append(f"{path.relative_to(ROOT)}: {name}, {match['title']!r}")
    assert missing == []
