"""Agent bundles of the hidden track (service.md §6): a ``.tar.gz`` checked whole before anything is written.

``check_bundle`` reads the archive once, as a stream, and refuses it at
the first member that breaks a rule: an absolute path or a ``..``, a
member that is not a regular file or a directory (symbolic and hard
links, devices, FIFOs, sparse files), a name seen before, more members or
more unpacked bytes than the limits (counted while reading, so a tar bomb
is refused at the header that crosses the line, not after unpacking it).
The gzip layer is bounded as well: a stream that decompresses to more
than the members' sizes allow is refused.  ``ember-agent.toml`` is read
and checked in the same pass.  ``extract_bundle`` then unpacks it with
``tarfile``'s ``filter="data"`` (on a Python without extraction filters,
through the same members already checked, each file opened without
following links), every file readable by the sandbox's uid.
"""

import contextlib
import gzip
import math
import os
import posixpath
import tarfile
import zlib

from ...canonical import split_module_name
from ..errors import ServiceRefusal
from ..submissions import MAX_POLICY, POLICY_PATTERN

MANIFEST = "ember-agent.toml"
#: The job's campaign file, written beside the bundle's files: no member may take its name.
RESERVED = ("ember-job.toml",)
MAX_MANIFEST_BYTES = 64 * 1024
#: What tar headers (and pax headers of long names) may add to the members' sizes in the gzip stream.
HEADER_ALLOWANCE = 64 << 20
_BLOCK = 1 << 16


def _refuse(message):
    raise ServiceRefusal(422, f"the bundle: {message}")


class _Counted:
    """The decompressed stream, refused past ``limit`` bytes (a gzip bomb behind few members)."""

    def __init__(self, raw, limit):
        self.raw = raw
        self.limit = limit
        self.count = 0

    def read(self, size=-1):
        data = self.raw.read(size)
        self.count += len(data)
        if self.count > self.limit:
            _refuse(f"decompresses to more than {self.limit:,} bytes")
        return data


class Manifest:
    """``ember-agent.toml``: the policy's ``name`` and its source (``agent`` words or ``python``), its limits."""

    def __init__(self, name, agent=None, python=None, step_timeout=None, memory_mb=None, episode_timeout=None):
        self.name = name
        self.agent = agent
        self.python = python
        self.step_timeout = step_timeout
        self.memory_mb = memory_mb
        self.episode_timeout = episode_timeout

    def as_dict(self):
        found = {"name": self.name, "agent": self.agent, "python": self.python}
        found.update(step_timeout=self.step_timeout, memory_mb=self.memory_mb, episode_timeout=self.episode_timeout)
        return {key: value for key, value in found.items() if value is not None}


def parse_manifest(data, team, limits):
    """The ``Manifest`` of ``ember-agent.toml``'s bytes; 422 naming the key otherwise."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the tomli backport
        import tomli as tomllib
    try:
        value = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        _refuse(f"{MANIFEST}: not valid TOML: {exc}")
    allowed = ("name", "agent", "python", "step_timeout", "memory_mb", "episode_timeout")
    for key in value:
        if key not in allowed:
            _refuse(f"{MANIFEST}: {key}: unknown key; expected one of {', '.join(allowed)}")
    name = value.get("name")
    if not isinstance(name, str) or not POLICY_PATTERN.fullmatch(name):
        _refuse(f"{MANIFEST}: name: expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*, got {name!r:.80}")
    if len(f"{team}.{name}") > MAX_POLICY:
        _refuse(f"{MANIFEST}: name: {team}.{name} is longer than {MAX_POLICY} characters")
    agent, python = value.get("agent"), value.get("python")
    if (agent is None) == (python is None):
        _refuse(f"{MANIFEST}: expected exactly one of 'agent' (a list of words) and 'python' (\"module:attr\")")
    if agent is not None and (
        not isinstance(agent, list) or not agent or not all(isinstance(w, str) and w and "\0" not in w for w in agent)
    ):
        _refuse(f"{MANIFEST}: agent: expected a non-empty list of non-empty strings, got {agent!r:.80}")
    if python is not None:
        module, attr = split_module_name(python) if isinstance(python, str) else ("", "")
        words = module.split(".")
        if not attr.isidentifier() or not all(word.isidentifier() for word in words):
            _refuse(f'{MANIFEST}: python: expected "module:attr", got {python!r:.80}')
    maxima = {
        "step_timeout": limits.max_step_timeout,
        "memory_mb": limits.max_memory_mb,
        "episode_timeout": limits.max_episode_timeout,
    }
    chosen = {}
    for key, maximum in maxima.items():
        item = value.get(key)
        if item is None:
            continue
        integral = key == "memory_mb"
        kinds = (int,) if integral else (int, float)
        if type(item) not in kinds or not math.isfinite(item) or item <= 0:
            expected = "an integer >= 1" if integral else "a number > 0"
            _refuse(f"{MANIFEST}: {key}: expected {expected}, got {item!r:.40}")
        if item > maximum:
            _refuse(f"{MANIFEST}: {key}: at most {maximum} on this board, got {item!r}")
        chosen[key] = float(item) if not integral else item
    return Manifest(name, agent, python, **chosen)


def _member_name(info):
    name = info.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        _refuse(f"{name!r:.120}: an absolute path")
    if "\\" in name or "\0" in name:
        _refuse(f"{name!r:.120}: a backslash or NUL in a name")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        _refuse(f"{name!r:.120}: a '..' in the path")
    if not parts:
        _refuse(f"{name!r:.120}: an empty name")
    return "/".join(parts)


def _kind(info):
    if info.issym():
        return "a symbolic link"
    if info.islnk():
        return "a hard link"
    if info.ischr() or info.isblk():
        return "a device"
    if info.isfifo():
        return "a FIFO"
    if info.issparse() or info.type == tarfile.GNUTYPE_SPARSE:
        return "a sparse file"
    if info.isfile() or info.isdir():
        return None
    return f"a member of type {info.type!r}"


def check_bundle(path, team, limits):
    """Check the bundle at ``path`` (as sent) whole; returns (``Manifest``, member names).  Writes nothing."""
    sent = os.path.getsize(path)
    if sent > limits.max_bundle_bytes:
        raise ServiceRefusal(413, f"the bundle is longer than {limits.max_bundle_bytes:,} bytes as sent")
    names = {}
    folders = set()  # every folder a member's path goes through
    total = 0
    manifest = None
    with open(path, "rb") as raw:
        if raw.read(2) != b"\x1f\x8b":
            _refuse("expected a .tar.gz (gzip) archive")
        raw.seek(0)
        limit = limits.max_bundle_unpacked_bytes + HEADER_ALLOWANCE
        stream = _Counted(gzip.GzipFile(fileobj=raw, mode="rb"), limit)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as archive:
                while True:
                    info = archive.next()
                    if info is None:
                        break
                    name = _member_name(info)
                    kind = _kind(info)
                    if kind is not None:
                        _refuse(f"{name!r:.120}: {kind} (regular files and directories only)")
                    if name in names:
                        _refuse(f"{name!r:.120}: a second member of that name")
                    if info.isfile() and name in folders:
                        _refuse(f"{name!r:.120}: a file where other members make a folder")
                    parent = posixpath.dirname(name)
                    while parent:
                        if names.get(parent) == "file":
                            _refuse(f"{name!r:.120}: inside {parent!r:.120}, which is a file")
                        folders.add(parent)
                        parent = posixpath.dirname(parent)
                    if name in RESERVED:
                        _refuse(f"{name!r}: a name the service keeps for itself")
                    names[name] = "dir" if info.isdir() else "file"
                    if len(names) > limits.max_bundle_members:
                        _refuse(f"more than {limits.max_bundle_members:,} members")
                    total += info.size
                    if total > limits.max_bundle_unpacked_bytes:
                        _refuse(f"more than {limits.max_bundle_unpacked_bytes:,} bytes unpacked")
                    if name == MANIFEST:
                        if not info.isfile() or info.size > MAX_MANIFEST_BYTES:
                            _refuse(f"{MANIFEST}: expected a file of at most {MAX_MANIFEST_BYTES:,} bytes")
                        manifest = parse_manifest(archive.extractfile(info).read(), team, limits)
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            _refuse(f"not a readable .tar.gz: {' '.join(str(exc).split()) or type(exc).__name__}")
    if manifest is None:
        _refuse(f"no {MANIFEST} at the archive's top level")
    if manifest.python is not None:
        top = split_module_name(manifest.python)[0].split(".")[0]
        if names.get(top) != "dir" and names.get(f"{top}.py") != "file":
            _refuse(f"{MANIFEST}: python: no module {top} (a {top}.py or a {top}/ folder) in the bundle")
    return manifest, sorted(names)


def extract_bundle(path, folder):
    """Unpack a bundle ``check_bundle`` accepted into the new folder ``folder``; every file readable by all."""
    os.makedirs(folder, mode=0o755)
    with tarfile.open(path, mode="r:gz") as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(folder, filter="data")
        else:
            _extract_checked(archive, folder)
    for where, folders, files in os.walk(folder):
        os.chmod(where, 0o755)
        for name in files:
            target = os.path.join(where, name)
            executable = os.lstat(target).st_mode & 0o100
            os.chmod(target, 0o755 if executable else 0o644)
        del folders  # walked by os.walk itself


def _extract_checked(archive, folder):
    """What ``filter="data"`` does, for members already checked (regular files and folders, relative names)."""
    for info in archive:
        parts = [part for part in info.name.split("/") if part not in ("", ".")]
        target = os.path.join(folder, *parts)
        if info.isdir():
            os.makedirs(target, mode=0o755, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(target, flags, 0o755 if info.mode & 0o100 else 0o644)
        with os.fdopen(fd, "wb") as out, contextlib.closing(archive.extractfile(info)) as source:
            for block in iter(lambda: source.read(_BLOCK), b""):
                out.write(block)
