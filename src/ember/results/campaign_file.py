"""The one reader of campaign files (campaign.md §2): ``evaluate``, ``verify --campaign`` and every other reader.

A campaign file is looked at before it is opened and opened without
blocking: a FIFO, a device or a directory is refused at once with its path
(a FIFO would block ``open``, ``/dev/zero`` would never end), and at most
``MAX_CAMPAIGN_FILE_BYTES`` are read.  Every failure is a
``CampaignFileError`` (one line, the path, what went wrong); what the TOML
says is checked by its reader (``ember.campaign.campaign_file``).
"""

import os
import stat
import sys

from ..errors import CampaignFileError
from .reader import file_kind

#: A campaign file is read whole, at most this many bytes (a million seeds listed one by one fit).
MAX_CAMPAIGN_FILE_BYTES = 64 * 1024 * 1024


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the conditional runtime dependency
        import tomli as tomllib
    return tomllib


def read_campaign_bytes(path):
    """The bytes of the campaign file ``path``; raises ``CampaignFileError``."""
    shown = os.fspath(path)

    def reason(exc):
        return exc.strerror or str(exc)

    try:
        info = os.stat(path)
    except FileNotFoundError as exc:
        raise CampaignFileError(shown, "missing", reason(exc)) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise CampaignFileError(shown, "unreadable", reason(exc) if isinstance(exc, OSError) else str(exc)) from None
    if not stat.S_ISREG(info.st_mode):
        raise CampaignFileError(shown, "not-a-file", f"is {file_kind(info.st_mode)}, expected a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:  # removed in between
        raise CampaignFileError(shown, "missing", reason(exc)) from None
    except OSError as exc:
        raise CampaignFileError(shown, "unreadable", reason(exc)) from None
    with open(fd, "rb") as handle:
        info = os.fstat(fd)  # what was opened, which may have been swapped in after the stat
        if not stat.S_ISREG(info.st_mode):
            raise CampaignFileError(shown, "not-a-file", f"is {file_kind(info.st_mode)}, expected a regular file")
        try:
            data = handle.read(MAX_CAMPAIGN_FILE_BYTES + 1)
        except OSError as exc:
            raise CampaignFileError(shown, "unreadable", reason(exc)) from None
    if len(data) > MAX_CAMPAIGN_FILE_BYTES:
        raise CampaignFileError(shown, "too-large", f"longer than {MAX_CAMPAIGN_FILE_BYTES:,} bytes")
    return data


def read_campaign_file(path):
    """The TOML document (a dict) of the campaign file ``path``; raises ``CampaignFileError``."""
    data = read_campaign_bytes(path)
    tomllib = _toml()
    shown = os.fspath(path)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CampaignFileError(shown, "not-utf8", f"not UTF-8 text: {exc.reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CampaignFileError(shown, "not-toml", f"not valid TOML: {exc}") from None
