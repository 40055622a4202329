"""Exit statuses of the ``ember`` command (output.md, campaign.md §3 and §6)."""

EXIT_OK = 0
#: ``evaluate``: the campaign ran, but some episodes have no row.
EXIT_INCOMPLETE = 1
#: ``verify``: a row does not match its record or cannot be checked (isolation.md §3, campaign.md §6).
EXIT_MISMATCH = 1
#: ``| head`` went away: stop quietly, as Unix tools do.
EXIT_BROKEN_PIPE = 1
#: Bad input, and any error reading or writing a file or a standard stream.
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
