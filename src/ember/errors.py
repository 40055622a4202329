"""Exception hierarchy: one root, each subclass also a ``ValueError``.

Modelled on Hypothesis' ``errors.py``: callers can catch ``EmberError`` for
everything EMBER raises on bad input, or the built-in ``ValueError``.
"""

import os

#: The key of the python-policy host's failure line (ember.isolation.host, read by ember.agent): no person
#: ID has a colon.  Here, in Base, because the host, started once per episode, imports nothing heavier.
HOST_ERROR_KEY = "ember:error"


class EmberError(Exception):
    """Root of every error EMBER raises on purpose."""


class ScenarioError(EmberError, ValueError):
    """A scenario breaks a rule of simulator.md §2 (the message names the path)."""


class ActionError(EmberError, ValueError):
    """Actions for a step are invalid, or the episode has terminated."""


class SeedError(EmberError, ValueError):
    """A seed outside 0 <= seed < 2^64."""


class AgentError(EmberError, ValueError):
    """The agent could not be started, or broke the protocol; names the step."""


class MetricsInputError(EmberError, ValueError):
    """The scenario/record pair cannot be measured: no partial result exists."""


class ReplayMismatchError(EmberError, ValueError):
    """A record is not byte-identical to the simulator's replay of it.

    ``step`` is the first differing step (0 for the header or initial state,
    None for the final state) and ``path`` the JSON path of the first
    differing field, when known.
    """

    def __init__(self, message, step=None, path=None):
        super().__init__(message)
        self.step = step
        self.path = path


class ResultsError(EmberError, ValueError):
    """A results directory breaks campaign.md §4 / ranking.md §1 (``ember.results`` reads it).

    ``file`` is the offending file's name inside the results directory
    (``campaign.json``, ``episodes.jsonl``, ``.`` for the directory itself),
    ``line`` its 1-based line number (None for a file read as one JSON text)
    and ``reason`` the rest of the message.  ``directory``, when the file was
    read from a directory, is that directory as given; the message then
    names the file's path in it.
    """

    def __init__(self, file, line, reason, directory=None):
        where = file if directory is None else os.path.normpath(os.path.join(directory, file))
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {reason}")
        self.file = file
        self.line = line
        self.reason = reason
        self.directory = directory

    def __reduce__(self):  # picklable across worker processes (a row a worker refused to send)
        return (type(self), (self.file, self.line, self.reason, self.directory))


class StatisticsParameterError(EmberError, ValueError):
    """A replicate count or resampling seed outside statistics.md §3 (the message names the parameter)."""


class OutputPathError(EmberError, ValueError):
    """An output path that names no file (the empty string); the message says which."""


class OutputBusyError(EmberError, OSError):
    """An output path is being written by another process (``ember run -o`` holds a lock on it)."""


class BoundsError(EmberError, ValueError):
    """The bounds of bounds.md cannot be given as asked (a witness of an episode over the limit)."""


class RenderError(EmberError, ValueError):
    """The picture cannot be made (bad options, no Pillow, image too large)."""


class MissingExtraError(EmberError, ImportError):
    """An optional feature needs a package of an extra that is not installed (the message names it)."""


class CampaignError(EmberError, ValueError):
    """A campaign file, its results directory or a resume breaks campaign.md (the message names the place)."""


class CampaignFileError(CampaignError):
    """A campaign file cannot be read as one (``ember.results.read_campaign_file``): one line naming it.

    ``path`` is the file as given, ``kind`` what went wrong (``"missing"``,
    ``"unreadable"``, ``"not-a-file"``, ``"too-large"``, ``"not-utf8"``,
    ``"not-toml"``) and ``detail`` the reason in words, so that each command
    that reads a campaign file can say it in its own terms.
    """

    def __init__(self, path, kind, detail):
        self.path = path
        self.kind = kind
        self.detail = detail
        if kind in ("not-utf8", "not-toml"):
            message = f"{path}: {detail}."
        else:
            message = f"{path}: cannot read the campaign file: {detail}."
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.path, self.kind, self.detail))


class EnvConfigError(EmberError, ValueError):
    """A Gymnasium/PettingZoo environment (``ember.envs``) was given a bad argument."""


class GenerationError(EmberError, ValueError):
    """Scenario generator parameters that cannot make a scenario (the message names the parameter)."""


class ResultsIOError(EmberError, OSError):
    """Writing the results directory failed (a full disk, a read-only file system): EMBER's failure, not a policy's.

    Built like ``OSError(errno, strerror, path)``; the message names the path
    and the error, then ``note`` when given.  ``ember evaluate`` stops at
    once (exit status 2): no row is charged to a policy for it.
    """

    def __init__(self, errno, strerror, filename, note=None):
        super().__init__(errno, strerror, filename)
        self.note = note

    def __reduce__(self):  # picklable across worker processes, note included
        return (type(self), (self.errno, self.strerror, self.filename, self.note))

    def __str__(self):
        return f"{self.filename}: {self.strerror}" + (f"; {self.note}" if self.note else "")


class InteropError(EmberError, ValueError):
    """An export for an outside tool (``ember.interop``) was given a bad argument (the message names it)."""


class ServiceError(EmberError, ValueError):
    """Bad input to a service command or to ``ember submit`` (service.md §2): the message names the place."""


class DatabaseUnavailableError(EmberError, ConnectionError):
    """The service's database is down, locked or unreachable (service.md §8): named without its password."""


class RecordStoreFullError(EmberError, OSError):
    """The service's record store cannot take a record (a full disk, service.md §8): named by its path.

    Built like ``OSError(errno, message, path)``; the message is the whole text.
    """

    def __str__(self):
        return self.strerror


class SandboxError(EmberError, OSError):
    """The sandbox of isolation.md §2 cannot be made here, or failed to start (the message names what is missing)."""


def did_you_mean(name, known):
    """``"; did you mean 'NAME'?"`` for the closest of ``known`` to an unknown ``name`` (difflib), else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
