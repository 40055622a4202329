"""Agent bundles for the hidden-track tests: honest ones, and hostile archives made as real tar.gz files.

The large ones never exist unpacked: ``bomb_bundle`` writes a gzip
stream of many gzip members (one stream, as gzip reads it), the tar
headers in some and the same member of compressed zeros repeated for the
data, so a 4 GiB member costs a few MiB on disk and no 4 GiB anywhere.
"""

import gzip
import io
import os
import tarfile
import textwrap

#: A python policy: every active person stays (legal, and independent of the simulator's rules).
PYTHON_POLICY = """
def make_policy(scenario):
    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}
    return policy
"""

#: The minimal agent of docs/agent-protocol.md: every person stays.
AGENT = """
import json, sys

for line in sys.stdin.buffer:
    message = json.loads(line)
    if message["type"] == "observation":
        people = message["observation"]["people"]
        print(json.dumps({p["person_id"]: "stay" for p in people}), flush=True)
    elif message["type"] == "end":
        break
"""

MANIFEST_PYTHON = 'name = "{name}"\npython = "{module}:make_policy"\n'
MANIFEST_AGENT = 'name = "{name}"\nagent = ["python3", "agent.py"]\n'


def _info(name, size=0, kind=tarfile.REGTYPE, mode=0o644, **extra):
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    info.mode = mode
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def make_bundle(path, files, extra=()):
    """A .tar.gz at ``path`` of ``files`` ({name: text}) and ``extra`` (TarInfo, bytes or None) members."""
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = textwrap.dedent(text).encode()
            archive.addfile(_info(name, len(data)), io.BytesIO(data))
        for info, data in extra:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def python_bundle(path, name="walker", policy=PYTHON_POLICY, module="walker", manifest=None):
    text = manifest if manifest is not None else MANIFEST_PYTHON.format(name=name, module=module)
    return make_bundle(path, {"ember-agent.toml": text, f"{module}.py": policy})


def agent_bundle(path, agent_source=AGENT, name="runner", manifest=None):
    text = manifest if manifest is not None else MANIFEST_AGENT.format(name=name)
    return make_bundle(path, {"ember-agent.toml": text, "agent.py": agent_source})


def hostile_member(kind):
    """(TarInfo, data) of one member the bundle rules refuse."""
    if kind == "dotdot":
        return _info("../x", 2), b"x\n"
    if kind == "absolute":
        return _info("/etc/x", 2), b"x\n"
    if kind == "symlink":
        return _info("link", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), None
    if kind == "hardlink":
        return _info("hard", kind=tarfile.LNKTYPE, linkname="ember-agent.toml"), None
    if kind == "device":
        return _info("null", kind=tarfile.CHRTYPE, devmajor=1, devminor=3), None
    if kind == "fifo":
        return _info("pipe", kind=tarfile.FIFOTYPE), None
    if kind == "sparse":
        return _info("holes", kind=tarfile.GNUTYPE_SPARSE), None
    if kind == "duplicate":
        return _info("ember-agent.toml", 2), b"x\n"
    raise ValueError(kind)


def many_members_bundle(path, count):
    """A bundle with a manifest and ``count`` empty files (distinct names, ``f/0000000`` on).

    The empty members' headers are one ustar header with its name and checksum patched (``tarfile`` makes
    the first one), so 10^5 members take a moment rather than the seconds ``addfile`` would.
    """
    manifest = MANIFEST_PYTHON.format(name="many", module="walker").encode()
    head = _info("ember-agent.toml", len(manifest)).tobuf(format=tarfile.USTAR_FORMAT)
    template = bytearray(_info("f/0000000").tobuf(format=tarfile.USTAR_FORMAT))
    parts = [head, manifest, bytes(-len(manifest) % 512)]
    for number in range(count):
        template[0:9] = f"f/{number:07d}".encode()
        template[148:156] = b"        "
        template[148:156] = b"%06o\0 " % sum(template)
        parts.append(bytes(template))
    parts.append(bytes(1024))
    with open(path, "wb") as out:
        out.write(gzip.compress(b"".join(parts), compresslevel=1, mtime=0))
    return path


_ZEROS_MIB = None


def _gzip_zeros_mib():
    global _ZEROS_MIB
    if _ZEROS_MIB is None:
        _ZEROS_MIB = gzip.compress(bytes(1 << 20), compresslevel=9, mtime=0)
    return _ZEROS_MIB


def bomb_bundle(path, member_mib, members=1):
    """A gzip stream whose tar holds a manifest and ``members`` files of ``member_mib`` MiB of zeros each.

    Each part is its own gzip member (a gzip stream may hold many; they read as one), so the file is small
    and the unpacked bytes are never made: about 1 KiB on disk per MiB unpacked.
    """
    manifest = MANIFEST_PYTHON.format(name="bomb", module="walker").encode()
    head = _info("ember-agent.toml", len(manifest)).tobuf(format=tarfile.GNU_FORMAT)
    head += manifest + bytes(-len(manifest) % 512)
    zeros = _gzip_zeros_mib()
    with open(path, "wb") as out:
        out.write(gzip.compress(head, mtime=0))
        for number in range(members):
            header = _info(f"zeros-{number}", member_mib << 20).tobuf(format=tarfile.GNU_FORMAT)
            out.write(gzip.compress(header, mtime=0))
            for _ in range(member_mib):
                out.write(zeros)
        out.write(gzip.compress(bytes(1024), mtime=0))  # the end-of-archive blocks
    return os.path.getsize(path)
