"""``ember verify`` (campaign.md §6): re-authenticate the rows of a results directory from their records.

Every counting ok row is checked from scratch (isolation.md §3: a row
that cannot be is a failure unless the caller allows it): the
record's (decompressed) SHA-256 must be the row's ``record_sha256``; the
full engine (stages 1-3, ``ember.engine``) must accept it for the row's
scenario and seed; the metrics it gives must be the row's ``metrics``,
compared as canonical JSON bytes (so ``1``, ``1.0`` and ``true`` differ),
and its ``episode_steps`` the row's ``steps``.  A row that cannot be
checked is *unverifiable*, with its reason; the directory itself must be
one the results layer reads (else ``ResultsError``: bad input).

Where things come from (docs/campaigns.md):
- the scenario: ``scenarios/<scenario_id>.json`` in the directory, else
  a ``builtin:`` source, else the source path relative to the
  ``--campaign`` file's folder; it must hash to the row's
  ``scenario_hash``.  A ``scenarios/`` file that does not is a mismatch
  (the directory was changed); a built-in or campaign file that does not
  makes the row unverifiable (the scenario is not available here).
- the files made from the rows (``ranking.json``, ``statistics.json``),
  when present: recomputed by the caller's ``RecomputedFile`` functions
  (Ranking and Statistics sit above this part, ``ember.stats.recomputed``
  names them) and compared byte for byte.
- the record: relative to the results directory for a kept record,
  relative to the ``--campaign`` file's folder for a ``records`` entry
  (without ``--campaign``: to the results directory, where an exported
  board keeps its submissions).
"""

import os
from collections.abc import Callable
from typing import NamedTuple

from ..canonical import canonical_json_reference
from ..engine.authenticate import authenticate_record
from ..errors import CampaignFileError, EmberError, MetricsInputError, MissingExtraError, ResultsError, ScenarioError
from ..scenario import BUILTIN_PREFIX, MAX_SCENARIO_BYTES, compile_scenario
from ..strict_json import shown, strict_json
from .campaign_file import read_campaign_file
from .campaign_json import MAX_CAMPAIGN_BYTES
from .counting import OkRows
from .layout import CAMPAIGN_FILE, EPISODES_FILE, SCENARIOS_DIR
from .reader import open_regular, read_results, read_row_again

KEEP_RECORDS = "run 'ember evaluate --keep-records' to keep records"


class RecomputedFile(NamedTuple):
    """A file of the results directory made from its rows, which ``verify`` recomputes when it is there.

    ``name``: the file (``RANKING_FILE``, ``STATISTICS_FILE``);
    ``recompute(results, ok_rows, data)``: the bytes it must hold, from the
    checked ``Results``, their ``OkRows`` and the file's own bytes ``data`` (statistics.json names its
    B and seed).  ``MissingExtraError`` makes the file unverifiable; any
    other ``EmberError`` (rows it cannot be made from, a file naming no
    valid parameters) a mismatch, with its message.
    """

    name: str
    recompute: Callable


class VerifyReport:
    """What ``verify_results`` found, row by row (line numbers of ``episodes.jsonl``, 1-based), then file by file.

    ``verified``: lines; ``mismatched`` and ``unverifiable``: (line, reason)
    pairs, in file order.  ``rows`` is the number of counting ok rows;
    ``warnings`` the reader's (a torn last line), file names relative to
    the directory.  ``files``: (name, outcome, reason) of each recomputed
    file that is there, outcome ``identical``, ``mismatched`` or
    ``unverifiable`` (reason None when identical).
    """

    def __init__(self, rows, warnings=()):
        self.rows = rows
        self.warnings = list(warnings)
        self.verified = []
        self.mismatched = []
        self.unverifiable = []
        self.files = []
        #: With ``--campaign``: (the campaign file, the first difference of the directory from it, or None).
        self.campaign = None

    def files_with(self, outcome):
        return [name for name, found, _ in self.files if found == outcome]

    def passed(self, allow_unverifiable=False):
        """Nothing mismatched and nothing unverifiable (isolation.md §3); ``allow_unverifiable``: nothing mismatched."""
        if self.mismatched or self.files_with("mismatched") or self.campaign_differs():
            return False
        return allow_unverifiable or not (self.unverifiable or self.files_with("unverifiable"))

    def campaign_differs(self):
        return self.campaign is not None and self.campaign[1] is not None

    def summary(self):
        """The one summary line (without the ``ember:`` prefix)."""
        mismatched = f"{len(self.mismatched)} mismatched"
        if self.mismatched:
            lines = ", ".join(str(line) for line, _ in self.mismatched)
            mismatched += f" (line{'s' if len(self.mismatched) > 1 else ''} {lines})"
        rows = f"{len(self.verified)} verified, {mismatched}, {len(self.unverifiable)} unverifiable"
        files = "".join(f"; {name} recomputed: {_FILE_OUTCOMES[outcome]}" for name, outcome, _ in self.files)
        campaign = "; the campaign file: differs" if self.campaign_differs() else ""
        return f"{rows} of {self.rows} counting ok rows{files}{campaign}."


_FILE_OUTCOMES = {"identical": "identical", "mismatched": "differs", "unverifiable": "cannot be recomputed here"}


class _Unverifiable(Exception):  # noqa: N818 (a signal inside this module, never raised out of it)
    """The row cannot be checked: the reason."""


class _Mismatch(Exception):  # noqa: N818 (a signal inside this module, never raised out of it)
    """The row is not what its record gives: the reason."""


def _campaign_file_reason(exc):
    """What ``verify`` says of a ``--campaign`` file the campaign-file reader refused."""
    if exc.kind == "missing":
        return "missing (--campaign)"
    if exc.kind in ("not-utf8", "not-toml"):
        return f"not a campaign file (TOML): {exc.detail}"
    return f"{exc.detail} (--campaign)"


def _campaign_folder(campaign_file, campaign):
    """The folder of the ``--campaign`` file, after checking it is a campaign file of this campaign."""
    try:
        value = read_campaign_file(campaign_file)
    except CampaignFileError as exc:
        raise ResultsError(exc.path, None, _campaign_file_reason(exc)) from None
    if value.get("campaign") != campaign.name:
        raise ResultsError(
            os.fspath(campaign_file),
            None,
            f"names campaign {shown(value.get('campaign'))}, the results directory holds {shown(campaign.name)}",
        )
    return os.path.dirname(os.path.abspath(campaign_file))


class _Scenarios:
    """Each scenario hash's compiled scenario, found once; a failure is kept and raised for each of its rows."""

    def __init__(self, directory, campaign, folder):
        self.directory = directory
        self.campaign = campaign
        self.folder = folder
        self.found = {}

    def get(self, scenario_hash):
        if scenario_hash not in self.found:
            try:
                self.found[scenario_hash] = self._find(scenario_hash)
            except (_Unverifiable, _Mismatch) as exc:
                self.found[scenario_hash] = exc
        found = self.found[scenario_hash]
        if isinstance(found, Exception):
            raise found
        return found

    def _find(self, scenario_hash):
        scenario_id = self.campaign.scenarios[scenario_hash][0]
        source = self.campaign.sources[scenario_hash]
        kept = os.path.join(SCENARIOS_DIR, f"{scenario_id}.json")
        data = _read_if_there(os.path.join(self.directory, kept), kept, self.directory)
        if data is not None:
            return _compiled(data, kept, scenario_hash, _Mismatch)
        if source.startswith(BUILTIN_PREFIX):
            return _compiled(source, source, scenario_hash, _Unverifiable)
        if self.folder is None:
            raise _Unverifiable(
                f"no scenario: {kept} is missing and the source {shown(source)} is a path (give --campaign FILE)"
            )
        data = _read_if_there(os.path.join(self.folder, source), source, None)
        if data is None:
            raise _Unverifiable(f"no scenario: {kept} is missing, and so is {source} next to the campaign file")
        return _compiled(data, source, scenario_hash, _Unverifiable)


def _read_if_there(path, shown_path, directory):
    """The bytes of a scenario file, None when nothing is there; anything but a regular file is bad input."""
    if not os.path.lexists(path):
        return None
    with open_regular(path, shown_path, directory, missing="missing (a symbolic link to nothing)") as handle:
        return handle.read(MAX_SCENARIO_BYTES + 1)


def _compiled(source, where, scenario_hash, failure):
    try:
        scenario = compile_scenario(source)
    except ScenarioError as exc:
        raise failure(f"{where} is not a valid scenario: {exc}") from None
    if scenario.hash != scenario_hash:
        raise failure(f"{where} hashes to {scenario.hash}, the campaign's scenario_hash is {scenario_hash}")
    return scenario


def _first_difference(row, record, path="$"):
    """The JSON path of the first difference of two JSON values, types included, and the two values there."""
    if type(row) is not type(record):
        return path, row, record
    if isinstance(row, dict):
        for key in sorted(set(row) | set(record)):
            if key not in row or key not in record:
                return f"{path}.{key}", row.get(key, "(absent)"), record.get(key, "(absent)")
            found = _first_difference(row[key], record[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(row, list):
        for i, (mine, theirs) in enumerate(zip(row, record)):
            found = _first_difference(mine, theirs, f"{path}[{i}]")
            if found is not None:
                return found
        return (path, f"{len(row)} items", f"{len(record)} items") if len(row) != len(record) else None
    return None if canonical_json_reference(row) == canonical_json_reference(record) else (path, row, record)


def _record_file(directory, folder, row, kind):
    """The path of the row's record and what to say when it is missing.

    A kept record is in the results directory; a submitted one next to the
    ``--campaign`` file, or without one in the results directory too (an
    exported board holds its submissions there, service.md §7).
    """
    if kind != "records":
        return os.path.join(directory, row.record), "the record is missing"
    if folder is None:
        missing = (
            "the submitted record is not in the results directory "
            "(give --campaign FILE, whose folder its path is relative to)"
        )
        return os.path.join(directory, row.record), missing
    return os.path.join(folder, row.record), "the record is missing"


def _check_row(directory, row, kind, scenarios, folder):
    """Raise ``_Unverifiable`` or ``_Mismatch`` with the reason, or return: the row is verified."""
    if row.record is None:
        raise _Unverifiable(f"names no record ({KEEP_RECORDS})")
    path, missing = _record_file(directory, folder, row, kind)
    scenario = scenarios.get(row.key[0])
    try:
        handle = open_regular(path, row.record, missing=missing)
    except ResultsError as exc:  # missing, a FIFO, a directory, unreadable: nothing to check
        raise _Unverifiable(str(exc)) from None
    with handle:
        try:
            metrics, sha = authenticate_record(scenario, handle)
        except MetricsInputError as exc:
            raise _Mismatch(f"{row.record}: the engine refuses the record: {exc}") from None
        except OSError as exc:
            raise _Unverifiable(f"{row.record}: cannot read: {exc.strerror or exc}") from None
    if sha != row.record_sha256:
        raise _Mismatch(f"$.record_sha256: the row has {row.record_sha256}, {row.record}'s SHA-256 is {sha}")
    value = read_row_again(directory, row)
    measured = metrics.to_dict()
    if canonical_json_reference(value["metrics"]) != canonical_json_reference(measured):
        where, mine, theirs = _first_difference(value["metrics"], measured, "$.metrics")
        raise _Mismatch(f"{where}: the row has {shown(mine)}, {row.record} gives {shown(theirs)}")
    steps = measured["time"]["episode_steps"]
    if canonical_json_reference(value["steps"]) != canonical_json_reference(steps):
        raise _Mismatch(f"$.steps: the row has {shown(value['steps'])}, {row.record} gives {shown(steps)}")


def _difference(data, expected):
    """Where ``data`` first differs from ``expected`` (bytes): the byte, and the JSON path when both are JSON."""
    offset = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), min(len(data), len(expected)))
    where = f"at byte {offset}"
    try:
        found = _first_difference(strict_json(data), strict_json(expected))
    except ValueError:
        return f"{where} (the file is not JSON)"
    if found is None:
        return f"{where} (the same JSON in other bytes)"
    path, mine, theirs = found
    return f"{where}: {path}: the file has {shown(mine)}, recomputed {shown(theirs)}"


def _check_file(directory, results, ok_rows, recomputed):
    """(outcome, reason) of one recomputed file, or None when the directory holds no such file."""
    path = os.path.join(directory, recomputed.name)
    if not os.path.lexists(path):
        return None
    with open_regular(path, recomputed.name, directory, missing="missing (a symbolic link to nothing)") as handle:
        try:
            data = handle.read(MAX_CAMPAIGN_BYTES + 1)
        except OSError as exc:
            raise ResultsError(recomputed.name, None, f"cannot read: {exc.strerror or exc}", directory) from None
    if len(data) > MAX_CAMPAIGN_BYTES:
        return "mismatched", f"longer than {MAX_CAMPAIGN_BYTES:,} bytes: not a file EMBER wrote"
    try:
        expected = recomputed.recompute(results, ok_rows, data)
    except MissingExtraError as exc:
        return "unverifiable", str(exc)
    except EmberError as exc:
        return "mismatched", f"cannot be made from these rows: {exc}"
    if data == expected:
        return "identical", None
    if recomputed.name.endswith(".jsonl"):  # a file of lines (bounds.jsonl): its first differing line
        return "mismatched", _line_difference(data, expected)
    return "mismatched", f"differs from the bytes recomputed from the rows {_difference(data, expected)}"


def _seeds_difference(mine, theirs):
    """The smallest seed in one seed list and not the other, said as a phrase; None when they hold the same."""
    if list(mine) == list(theirs):
        return None
    wanted, kept = set(mine), set(theirs)
    missing = min(wanted - kept, default=None)
    extra = min(kept - wanted, default=None)
    if missing is None and extra is None:
        return None
    if extra is None or (missing is not None and missing < extra):
        return f"seed {missing} of the campaign file is not in the directory"
    return f"the directory has seed {extra}, which the campaign file does not list"


def campaign_difference(value, expected):
    """Where the directory's campaign.json ``value`` first differs from the campaign file's (``expected``, the
    campaign.json its run would write): its scenarios (by hash) and seeds must be exactly the file's, and every
    policy of the file must be in the directory with the same source and code.  The place and what differs,
    or None."""
    theirs = {scenario["scenario_hash"]: scenario for scenario in value["scenarios"]}
    by_id = {scenario["scenario_id"]: scenario for scenario in value["scenarios"]}
    for i, scenario in enumerate(expected["scenarios"]):
        place = f"scenarios[{i}] ({scenario['scenario_id']})"
        found = theirs.get(scenario["scenario_hash"])
        if found is None:
            namesake = by_id.get(scenario["scenario_id"])
            if namesake is not None:
                return (
                    f"{place}: the campaign file's scenario hashes to {scenario['scenario_hash']}, "
                    f"the directory's {scenario['scenario_id']} to {namesake['scenario_hash']}"
                )
            return f"{place}: the scenario {scenario['scenario_hash']} is not in the directory"
        seeds = _seeds_difference(scenario["seeds"], found["seeds"])
        if seeds is not None:
            return f"{place}: {seeds}"
    mine = {scenario["scenario_hash"] for scenario in expected["scenarios"]}
    for i, scenario in enumerate(value["scenarios"]):
        if scenario["scenario_hash"] not in mine:
            return (
                f"the directory's scenarios[{i}] ({scenario['scenario_id']}, {scenario['scenario_hash']}) "
                "is not in the campaign file"
            )
    policies = {policy["name"]: policy for policy in value["policies"]}
    for i, policy in enumerate(expected["policies"]):
        place = f"policies[{i}] ({policy['name']})"
        found = policies.get(policy["name"])
        if found is None:
            return f"{place} is not in the directory"
        if _without_code(found) != _without_code(policy):
            return f"{place}: {_source(policy)} in the campaign file, {_source(found)} in the directory"
        if "code" in policy and "code" not in found:
            return (
                f"{place}: the directory holds no code for it (written before campaign 1.1), "
                f"the file's is {policy['code']}"
            )
        if policy.get("code") != found.get("code"):
            return f"{place}: code {policy['code']} in the campaign file, {found['code']} in the directory"
    return None


def _without_code(policy):
    return {key: item for key, item in policy.items() if key != "code"}


def _source(policy):
    shown_keys = ", ".join(
        f"{key} = {shown(item)}" for key, item in sorted(policy.items()) if key not in ("name", "code")
    )
    return shown_keys or "without a source"


def _line_difference(data, expected):
    """The first line where a file of lines differs from its recomputation."""
    mine, theirs = data.splitlines(keepends=True), expected.splitlines(keepends=True)
    for number, (line, recomputed) in enumerate(zip(mine, theirs), 1):
        if line != recomputed:
            return f"line {number} differs from its recomputation {recomputed.rstrip().decode()}"
    return f"line {min(len(mine), len(theirs)) + 1}: the file has {len(mine)} lines, the recomputation {len(theirs)}"


def verify_results(directory, campaign_file=None, on_row=None, recomputed=(), load_campaign=None):
    """Re-authenticate every counting ok row of the results ``directory``; recompute the files made from them.

    ``campaign_file``: the campaign file (TOML) the directory was run from,
    needed for submitted records (``records`` entries) outside the
    directory and for scenarios that are neither in ``scenarios/`` nor
    built in.  ``on_row(done, total)`` is called after each row
    (progress).  ``recomputed``: ``RecomputedFile``s, each checked when
    its file is there (``ember.stats.recomputed()``: ranking.json and
    statistics.json).  ``load_campaign(campaign_file)``: the campaign.json
    a run of the campaign file would write (Campaign sits above this part and
    gives it): with it, the directory is compared with the campaign file
    (``campaign_difference``).  Returns a ``VerifyReport``; raises ``ResultsError``
    for bad input (a directory the results layer refuses, a bad
    ``--campaign`` file, a scenario file or a recomputed file that is not a
    regular file).
    """
    ok_rows = OkRows()
    results = read_results(directory, consumers=(ok_rows,))
    folder = None if campaign_file is None else _campaign_folder(campaign_file, results.campaign)
    scenarios = _Scenarios(directory, results.campaign, folder)
    rows = ok_rows.rows()
    report = VerifyReport(len(rows), results.warnings)
    if folder is not None and load_campaign is not None:
        report.campaign = (campaign_file, campaign_difference(results.campaign.value, load_campaign(campaign_file)))
    for done, row in enumerate(rows, 1):
        kind = results.campaign.policies[row.policy]
        episode = f"{row.policy} on {row.scenario_id} seed {row.key[1]}"
        try:
            _check_row(directory, row, kind, scenarios, folder)
        except _Unverifiable as exc:
            report.unverifiable.append((row.line, f"{episode}: {exc}"))
        except _Mismatch as exc:
            report.mismatched.append((row.line, f"{episode}: {exc}"))
        else:
            report.verified.append(row.line)
        if on_row is not None:
            on_row(done, len(rows))
    for recomputed_file in recomputed:
        found = _check_file(directory, results, ok_rows, recomputed_file)
        if found is not None:
            report.files.append((recomputed_file.name, *found))
    return report


def report_lines(directory, results_report):
    """The lines ``ember verify`` prints: one per mismatched and unverifiable row, in file order, one per such
    recomputed file, then the summary."""
    where = os.path.normpath(os.path.join(directory, EPISODES_FILE))
    found = [(line, "mismatched", reason) for line, reason in results_report.mismatched]
    found += [(line, "unverifiable", reason) for line, reason in results_report.unverifiable]
    lines = [f"{where}:{line}: {what}: {reason}" for line, what, reason in sorted(found)]
    lines += [
        f"{os.path.normpath(os.path.join(directory, name))}: {outcome}: {reason}"
        for name, outcome, reason in results_report.files
        if reason is not None
    ]
    if results_report.campaign_differs():
        campaign_file, difference = results_report.campaign
        where = os.path.normpath(os.path.join(directory, CAMPAIGN_FILE))
        lines.append(f"{where}: differs from the campaign file {campaign_file}: {difference}")
    return [*lines, f"ember verify: {results_report.summary()}"]


__all__ = ["RecomputedFile", "VerifyReport", "campaign_difference", "report_lines", "verify_results"]
