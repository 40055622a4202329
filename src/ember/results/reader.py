"""The strict reader of a results directory: its files, read in bounded memory.

``read_results(directory)`` checks ``campaign.json`` (``campaign_json``)
and every line of ``episodes.jsonl`` (``rows.check_row``, in order through
``counting``) and returns a ``Results``.  Every file is looked at before
it is opened: a FIFO, a device, a socket or a directory where a file
belongs is refused at once, saying what it is (a FIFO would block
``open``, ``/dev/zero`` would never end); "missing" means missing.
``campaign.json`` is read whole up to ``MAX_CAMPAIGN_BYTES``;
``episodes.jsonl`` is streamed line by line, each line at most
``MAX_LINE_BYTES``, so memory holds one line, the counting table and what
the reader's consumers keep, never the file.
"""

import copy
import hashlib
import io
import os
import stat

from ..errors import ResultsError
from ..strict_json import strict_json
from .campaign_json import MAX_CAMPAIGN_BYTES, CampaignJson
from .counting import CountingTable
from .layout import CAMPAIGN_FILE, EPISODES_FILE
from .rows import MAX_LINE_BYTES, check_row
from .values import Invalid

NOT_RESULTS = "missing: not a results directory ('ember evaluate -o' writes it)"
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISREG, "a regular file"),
)


def file_kind(mode):
    """What a file of this ``st_mode`` is, in words ("a FIFO", "a directory", ...)."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _reason(exc):
    return (exc.strerror or str(exc)).rstrip(".")


def open_regular(path, file, directory=None, missing=NOT_RESULTS):
    """``path`` opened for reading in binary if it is a regular file (symlinks followed).

    Anything else is a ``ResultsError`` naming ``file`` (in ``directory``):
    ``missing`` when nothing is there, what it is otherwise (``is a FIFO,
    expected a regular file``), or why it cannot be read.  It is looked at
    before it is opened and opened without blocking, so a FIFO never blocks
    and a device is never read.
    """

    def fail(reason):
        return ResultsError(file, None, reason, directory)

    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise fail(missing) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise fail(f"cannot read: {_reason(exc) if isinstance(exc, OSError) else exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise fail(f"is {file_kind(info.st_mode)}, expected a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:  # removed in between
        raise fail(missing) from None
    except OSError as exc:
        raise fail(f"cannot read: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)  # what was opened, which may have been swapped in after the stat
        if not stat.S_ISREG(info.st_mode):
            raise fail(f"is {file_kind(info.st_mode)}, expected a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_directory(directory):
    """Refuse a ``directory`` that is not one, naming what it is."""
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        raise ResultsError(
            ".", None, "no such directory, expected a results directory ('ember evaluate -o')", directory
        ) from None
    except (OSError, ValueError) as exc:
        reason = _reason(exc) if isinstance(exc, OSError) else exc
        raise ResultsError(".", None, f"cannot read: {reason}", directory) from None
    if not stat.S_ISDIR(info.st_mode):
        raise ResultsError(
            ".", None, f"is {file_kind(info.st_mode)}, expected a results directory ('ember evaluate -o')", directory
        )


def _read_failed(file, line, exc, directory):
    return ResultsError(file, line, f"cannot read: {_reason(exc)}", directory)


def read_campaign_value(directory, handle=None):
    """The parsed (not yet checked) ``campaign.json`` of ``directory``; raises ``ResultsError``.

    ``handle``: the file already opened with ``open_regular`` (it is closed).
    """
    if handle is None:
        handle = open_regular(os.path.join(directory, CAMPAIGN_FILE), CAMPAIGN_FILE, directory)
    with handle:
        try:
            data = handle.read(MAX_CAMPAIGN_BYTES + 1)
        except OSError as exc:
            raise _read_failed(CAMPAIGN_FILE, None, exc, directory) from None
    if len(data) > MAX_CAMPAIGN_BYTES:
        raise ResultsError(
            CAMPAIGN_FILE, None, f"longer than {MAX_CAMPAIGN_BYTES:,} bytes (the limit, docs/campaigns.md)", directory
        )
    return parse_campaign(data, directory)


def parse_campaign(data, directory=None):
    """Parse the bytes of ``campaign.json`` strictly; raises ``ResultsError``."""
    try:
        return strict_json(data)
    except ValueError as exc:
        raise ResultsError(CAMPAIGN_FILE, None, f"not a JSON text: {exc}", directory) from None


def check_campaign(value, directory=None, rules=None):
    """A ``CampaignJson`` of a parsed ``campaign.json``; raises ``ResultsError``."""
    try:
        campaign = CampaignJson(value)
        reason = rules.check_campaign(campaign) if rules is not None else None
        if reason is not None:
            raise Invalid(reason)
    except Invalid as exc:
        raise ResultsError(CAMPAIGN_FILE, None, str(exc), directory) from None
    return campaign


class Results:
    """A results directory's checked content: the campaign, where each counting row is, what was left aside.

    ``campaign`` is the ``CampaignJson`` (``campaign.value`` the parsed file);
    ``statuses`` the ``CountingTable`` (each (policy, episode key)'s
    counting row: its status and place); ``lines`` the number of complete
    lines, ``episodes_sha256`` the hex SHA-256 of ``episodes.jsonl`` up to
    its last newline, ``torn`` the bytes after it and ``warnings`` what a
    reader should say about them (file names relative to ``directory``,
    None for bytes given directly).  What a command keeps of the rows
    themselves its consumers kept while they were read (``read_results``);
    ``counting_rows`` reads counting rows again, in any order.
    """

    def __init__(self, directory, campaign, statuses, lines, episodes_sha256, torn, source):
        self.directory = directory
        self.campaign = campaign
        self.statuses = statuses
        self.lines = lines
        self.episodes_sha256 = episodes_sha256
        self.torn = torn
        self._source = source  # episodes.jsonl's path, or its bytes
        self.warnings = []
        if torn:
            self.warnings.append(
                f"{EPISODES_FILE}:{lines + 1}: ignored {len(torn)} bytes after the last newline (a torn line)"
            )

    def counting_rows(self, slots):
        """For each (policy, episode key) of ``slots``, in that order: its counting ``Row`` read again, or None.

        Each row is read at its place and checked again (``Row.value`` and
        ``Row.metrics`` kept), one at a time: memory holds one row.  A line
        that is no longer the row that was checked is a ``ResultsError``.
        """
        if isinstance(self._source, (bytes, bytearray, memoryview)):
            handle = io.BytesIO(self._source)
        else:
            handle = open_regular(self._source, EPISODES_FILE, self.directory)
        with handle:
            for policy, key in slots:
                place = self.statuses.place(policy, key)
                if place is None:
                    yield None
                    continue
                row = _row_at(handle, place, self.directory, self.campaign)
                if (row.policy, row.key) != (policy, key):
                    raise _changed(place.line, self.directory)
                row.previous = place.previous
                yield row


def _changed(line, directory):
    return ResultsError(
        EPISODES_FILE, line, "the line changed while it was read (is an 'ember evaluate' rewriting it?)", directory
    )


def _line_at(handle, place, directory):
    """The parsed line at ``place`` (a ``Place`` or a ``Row``) of an open episodes.jsonl."""
    try:
        handle.seek(place.offset)
        data = handle.read(place.length + 1)
    except OSError as exc:
        raise _read_failed(EPISODES_FILE, place.line, exc, directory) from None
    try:
        if len(data) != place.length + 1 or not data.endswith(b"\n"):
            raise ValueError("the line moved")
        return strict_json(data[:-1])
    except ValueError:
        raise _changed(place.line, directory) from None


def _row_at(handle, place, directory, campaign):
    value = _line_at(handle, place, directory)
    try:
        row = check_row(value, campaign)
    except Invalid:
        raise _changed(place.line, directory) from None
    row.line, row.offset, row.length = place.line, place.offset, place.length
    return row


def _lines_of_bytes(data, max_line_bytes):
    """(number, offset, line without its newline) of ``data``'s complete lines; then the torn bytes (returned)."""
    start = number = 0
    while True:
        stop = data.find(b"\n", start, start + max_line_bytes)
        if stop < 0:
            rest = len(data) - start
            if rest >= max_line_bytes:
                yield number + 1, start, None  # too long
            return data[start:]
        number += 1
        yield number, start, data[start:stop]
        start = stop + 1


def _lines_of_file(handle, max_line_bytes, directory):
    """As ``_lines_of_bytes``, read from an open file one line at a time."""
    offset = number = 0
    while True:
        try:
            data = handle.readline(max_line_bytes)
        except OSError as exc:
            raise _read_failed(EPISODES_FILE, number + 1, exc, directory) from None
        if not data.endswith(b"\n"):
            if len(data) >= max_line_bytes:
                yield number + 1, offset, None
            return data
        number += 1
        yield number, offset, data[:-1]
        offset += len(data)


class CheckedLines:
    """The rows of lines a reader checked before, by their bytes (``results_of_bytes(checked=...)``).

    For a caller that reads rows it has read before, again and again (the service's board at each of its
    versions): a line seen in the last reading is not parsed and checked again.  A line's checks depend on
    its bytes and on the campaign's scenarios and policies only, so a kept row is used when the scenarios are
    the ones it was checked under and its policy is in the campaign; any other line is checked afresh.  Each
    reading gets copies (its own ``line``, ``offset`` and ``previous``); rules see a kept row with ``value``
    None (``StatisticsRules`` reads the row only).  Holds the lines of the last reading only.
    """

    def __init__(self):
        self._scenarios = None
        self._rows = {}
        self._next = {}

    def begin(self, campaign):
        scenarios = {h: (scenario_id, list(seeds)) for h, (scenario_id, seeds) in campaign.scenarios.items()}
        if scenarios != self._scenarios:
            self._scenarios, self._rows = scenarios, {}
        self._next = {}

    def get(self, data, campaign):
        kept = self._rows.get(data)
        if kept is None or kept.policy not in campaign.policies:
            return None
        return copy.copy(kept)

    def keep(self, data, row):
        self._next[data] = copy.copy(row)

    def finish(self):
        self._rows, self._next = self._next, {}


def _count(campaign, lines, directory, rules, consumers, max_line_bytes, source, checked=None):
    """The one row iterator: each line checked, then given to the counting table, ``rules`` and ``consumers``."""
    statuses = CountingTable(campaign)
    sha = hashlib.sha256()
    number = 0
    while True:
        try:
            number, offset, data = next(lines)
        except StopIteration as end:
            torn = end.value or b""
            break
        if data is None:
            raise ResultsError(
                EPISODES_FILE,
                number,
                f"the line is longer than {max_line_bytes:,} bytes (the limit of one row, docs/campaigns.md)",
                directory,
            )
        sha.update(data)
        sha.update(b"\n")
        try:
            row = None if checked is None else checked.get(data, campaign)
            if row is None:
                try:
                    value = strict_json(data)
                except ValueError as exc:
                    raise Invalid(f"not a JSON text: {exc}") from None
                row = check_row(value, campaign)
            else:
                value = None
            row.line, row.offset, row.length = number, offset, len(data)
            statuses.add(row)
            reason = rules.check_row(row, value) if rules is not None else None
            if reason is not None:
                raise Invalid(reason)
        except Invalid as exc:
            raise ResultsError(EPISODES_FILE, number, str(exc), directory) from None
        for consumer in consumers:
            consumer.add(row)
        row.value = row.metrics = None  # a consumer keeps what it needs, never the parsed line
        if checked is not None:
            checked.keep(data, row)
    if checked is not None:
        checked.finish()
    return Results(directory, campaign, statuses, number, sha.hexdigest(), torn, source)


def read_results(directory, *, rules=None, consumers=(), max_line_bytes=MAX_LINE_BYTES):
    """Check a results directory's ``campaign.json`` and ``episodes.jsonl``; returns ``Results``.

    Raises ``ResultsError`` naming the file (in ``directory``, as given) and
    for ``episodes.jsonl`` the 1-based line.  ``rules`` (a ``RowRules``)
    adds input rules.  Each checked row, in file order, goes to every one
    of ``consumers`` (``add(row)``, ``Row.value`` and ``Row.metrics`` set
    for the call only), which keep what they need of it (``OkRows``: the ok
    rows' checked values).  ``max_line_bytes`` counts a line's newline.
    """
    check_directory(directory)
    # Both files are looked at before either is read: a missing or a strange one is named first.
    campaign_file = open_regular(os.path.join(directory, CAMPAIGN_FILE), CAMPAIGN_FILE, directory)
    path = os.path.join(directory, EPISODES_FILE)
    try:
        episodes_file = open_regular(path, EPISODES_FILE, directory)
    except BaseException:
        campaign_file.close()
        raise
    with episodes_file:
        campaign = check_campaign(read_campaign_value(directory, campaign_file), directory, rules)
        lines = _lines_of_file(episodes_file, max_line_bytes, directory)
        return _count(campaign, lines, directory, rules, consumers, max_line_bytes, path)


def results_of_bytes(campaign, episodes, *, rules=None, consumers=(), max_line_bytes=MAX_LINE_BYTES, checked=None):
    """``read_results`` of a parsed ``campaign.json`` and the bytes of ``episodes.jsonl`` (no files).

    ``checked``: a ``CheckedLines`` kept from reading to reading, so that lines read before are not checked again.
    """
    resolved = check_campaign(campaign, None, rules)
    if checked is not None:
        checked.begin(resolved)
    data = bytes(episodes)
    lines = _lines_of_bytes(data, max_line_bytes)
    return _count(resolved, lines, None, rules, consumers, max_line_bytes, data, checked)


def read_row_again(directory, row):
    """The parsed line of a counting ``row`` of ``directory``'s episodes.jsonl, read again at its offset.

    A line that is no longer what was checked (the file changed) is a ``ResultsError``.
    """
    path = os.path.join(directory, EPISODES_FILE)
    with open_regular(path, EPISODES_FILE, directory) as handle:
        return _line_at(handle, row, directory)


__all__ = [
    "CheckedLines",
    "Results",
    "check_campaign",
    "check_directory",
    "file_kind",
    "open_regular",
    "parse_campaign",
    "read_campaign_value",
    "read_results",
    "read_row_again",
    "results_of_bytes",
]
