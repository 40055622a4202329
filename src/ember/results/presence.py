"""Which counting ok rows ``ember verify`` can check: those whose record is present (isolation.md §3).

``rank``, ``stats`` and the report say it in one sentence,
``RecordPresence(results).note()``: how many counting ok rows *have their record
present* (a regular file at the row's ``record`` path in the results
directory), not merely name one, since a row whose record was deleted
is as unverifiable as a row without one.  A submitted record
(``records`` entry) is looked for in the results directory too, where
``ember verify`` looks without ``--campaign`` (an exported board keeps
its submissions there); one kept next to a campaign file is said to be
elsewhere.
"""

import os
import stat


def _is_file(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _rows(count, singular, plural):
    return f"{count} {singular if count == 1 else plural}"


class RecordPresence:
    """The counting ok rows of checked ``Results``: how many have their record present, and why the others do not.

    ``rows``: counting ok rows; ``present``: with their record a regular
    file in the directory; ``unnamed``: naming no record; ``missing``: a
    kept record (or any record, when the rows were read without a
    directory) that is not there; ``elsewhere``: a submitted record not in
    the directory.
    """

    def __init__(self, results):
        self.rows = self.present = self.unnamed = self.missing = self.elsewhere = 0
        for row in results.ok_rows():
            self.rows += 1
            if row.record is None:
                self.unnamed += 1
            elif results.directory is not None and _is_file(os.path.join(results.directory, row.record)):
                self.present += 1
            elif results.campaign.policies[row.policy] == "records" and results.directory is not None:
                self.elsewhere += 1
            else:
                self.missing += 1

    def complete(self):
        """Whether every counting ok row has its record present (``ember verify`` can check the whole board)."""
        return self.present == self.rows

    def note(self):
        """The one sentence, without the ``ember:`` prefix or a final full stop."""
        head = f"{self.present} of {self.rows} counting ok rows have their record present"
        if self.complete():
            return f"{head} (ember verify checks them)"
        reasons = []
        if self.unnamed:
            reasons.append(
                _rows(self.unnamed, "names no record", "name no record") + " (run 'ember evaluate --keep-records')"
            )
        if self.missing:
            reasons.append(_rows(self.missing, "names a record that is missing", "name a record that is missing"))
        if self.elsewhere:
            reasons.append(
                _rows(self.elsewhere, "names a submitted record", "name a submitted record")
                + " that is not in the directory (ember verify --campaign FILE looks next to the campaign file)"
            )
        reasons = ", ".join(reasons)
        if self.present == 0:
            return f"{head}: nothing here can be re-verified: {reasons}"
        return f"{head} (ember verify checks them); {self.rows - self.present} cannot be re-verified: {reasons}"


__all__ = ["RecordPresence"]
