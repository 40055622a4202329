"""The record store (service.md §1, §3, §8): ``DATA/records/<h[:2]>/<h>.record[.gz|.zst]``, content-addressed.

An upload's bytes, as sent, go to a temporary file in ``records/tmp``
while they stream; only after the engine's verdict is the file fsynced
and renamed to its content address (h = SHA-256 of the decompressed
record, suffix from its first bytes).  A full disk is a
``RecordStoreFullError`` naming the store.  At start the ``serve`` parent
sweeps: every temporary file goes, and a stored record goes only when no
row names it and it is older than an hour.
"""

import contextlib
import errno
import os
import re
import time
import uuid

from ..engine.authenticate import record_suffix
from ..errors import RecordStoreFullError
from ..files import fsync_directory
from .config import TMP_DIR

SWEEP_AGE_S = 3600
_STORED = re.compile(r"[0-9a-f]{2}/[0-9a-f]{64}\.record(\.gz|\.zst)?")
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class RecordStore:
    def __init__(self, root):
        self.root = root
        self.tmp = os.path.join(root, TMP_DIR)

    def full(self, exc):
        return RecordStoreFullError(exc.errno, f"the record store {self.root} is full ({exc.strerror})", self.root)

    def temporary(self):
        """A new temporary record file (``TemporaryRecord``)."""
        try:
            os.makedirs(self.tmp, exist_ok=True)
            return TemporaryRecord(self, os.path.join(self.tmp, f"{uuid.uuid4()}.part"))
        except OSError as exc:
            if exc.errno in _FULL:
                raise self.full(exc) from None
            raise

    def path(self, stored):
        """The file of a stored record (``stored`` as a row names it: ``ab/abcd….record.gz``)."""
        if not _STORED.fullmatch(stored):
            raise ValueError(f"not a stored record's name: {stored!r}")
        return os.path.join(self.root, stored)

    def sweep(self, named, age_s=SWEEP_AGE_S):
        """Remove every temporary file, and each stored record no row names (``named``) older than ``age_s``."""
        removed = []
        if os.path.isdir(self.tmp):
            for name in os.listdir(self.tmp):
                os.unlink(os.path.join(self.tmp, name))
                removed.append(os.path.join(TMP_DIR, name))
        limit = time.time() - age_s
        for prefix in sorted(os.listdir(self.root)) if os.path.isdir(self.root) else ():
            folder = os.path.join(self.root, prefix)
            if prefix == TMP_DIR or not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                stored = f"{prefix}/{name}"
                path = os.path.join(folder, name)
                if stored not in named and _STORED.fullmatch(stored) and os.lstat(path).st_mtime < limit:
                    os.unlink(path)
                    removed.append(stored)
        return removed


class TemporaryRecord:
    """One upload's bytes as sent: ``write`` while they stream, then ``commit(h)`` or ``discard()``."""

    def __init__(self, store, path):
        self.store = store
        self.path = path
        self.head = b""
        self.handle = open(path, "xb")  # noqa: SIM115 (closed by commit or discard)

    def write(self, chunk):
        if len(self.head) < 4:
            self.head += bytes(chunk[: 4 - len(self.head)])
        try:
            self.handle.write(chunk)
        except OSError as exc:
            if exc.errno in _FULL:
                raise self.store.full(exc) from None
            raise

    def commit(self, sha256):
        """fsync, rename to the content address; returns the stored name (``ab/abcd….record.gz``)."""
        stored = f"{sha256[:2]}/{sha256}{record_suffix(self.head)}"
        target = os.path.join(self.store.root, stored)
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(self.path, target)
            fsync_directory(os.path.dirname(target))
        except OSError as exc:
            self.discard()
            if exc.errno in _FULL:
                raise self.store.full(exc) from None
            raise
        return stored

    def discard(self):
        if not self.handle.closed:
            self.handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
