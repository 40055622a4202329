"""The signed head of a board's log (service.md §9 "The log is anchored"): the key pair, the head, its check.

The hash chain alone proves nothing about who wrote it: anyone can drop
a team's entries and compute the chain again.  So the service holds an
Ed25519 key pair, made by ``ember service init`` (``KEY_FILE``, mode
0600, PKCS 8 PEM, and ``PUBLIC_KEY_FILE``, the base64 public key the
operator publishes), and signs heads: ``{"board", "seq", "hash", "at",
"signature"}``, the signature (64 bytes, base64) over the canonical JSON
of ``{"at", "board", "hash", "seq"}``.  ``GET /api/boards/{board}/log/head``
answers a fresh one; every export holds one signed when it was written
(``LOG_HEAD_FILE``).

``ember verify R --log LOG --public-key K`` checks, here, that the export's
head is signed by K and names the chain's last entry; ``--service URL``
also fetches the service's key and live head and checks that the live log
holds the export's entries byte for byte.  The chain itself is
``ember.results.log``'s check; this module needs only ``cryptography``
(and ``httpx`` for ``--service``), imported when used.
"""

import base64
import binascii
import json
import os
import re
import tempfile

from ..canonical import canonical_json_reference
from ..errors import MissingExtraError, ServiceError
from ..files import fsync_directory
from ..results.layout import LOG_HEAD_FILE
from ..results.log import check_log_entries
from ..strict_json import shown, strict_json

KEY_FILE = "signing.key"
PUBLIC_KEY_FILE = "signing.pub"
HEAD_KEYS = ("at", "board", "hash", "seq", "signature")
#: ``at`` as the log writes it (service.md §4).
AT_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
HASH_PATTERN = re.compile(r"[0-9a-f]{64}")
PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
#: A head file is a few hundred bytes; anything much longer is not one.
MAX_HEAD_BYTES = 4096
INSTALL = "pip install 'ember-eval[service]'"


def require():
    """Fail now (``MissingExtraError``) when ``cryptography`` is not installed."""
    _ed25519()


def _ed25519():
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise MissingExtraError(f"signed log heads need cryptography (the 'service' extra): {INSTALL}") from None
    return ed25519


def _serialization():
    from cryptography.hazmat.primitives import serialization

    return serialization


# -- the key pair ------------------------------------------------------------------------------


def key_text(raw):
    """K: the base64 (RFC 4648, padded) of a 32-byte raw public key."""
    return base64.b64encode(raw).decode("ascii")


def public_key_text(private_key):
    """K of the service's private key."""
    serialization = _serialization()
    return key_text(private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _write_new(path, data):
    """Write ``data`` to ``path`` (mode 0600) only if it does not exist; False when it does.

    Written under a temporary name and linked into place, so a killed
    ``init`` never leaves half a key and two at once keep one.
    """
    folder = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
    finally:
        os.unlink(temporary)
    fsync_directory(folder)
    return True


def ensure_key(data):
    """Make the service's key pair in ``data`` unless it has one; returns True when it was made now."""
    ed25519 = _ed25519()
    serialization = _serialization()
    path = os.path.join(data, KEY_FILE)
    made = False
    if not os.path.exists(path):
        key = ed25519.Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        made = _write_new(path, pem)
    public = os.path.join(data, PUBLIC_KEY_FILE)
    if not os.path.exists(public):
        _write_new(public, (public_key_text(load_key(data)) + "\n").encode("ascii"))
    return made


def load_key(data):
    """The service's private key (``data/KEY_FILE``); ``ServiceError`` naming the file when it is missing or bad."""
    ed25519 = _ed25519()
    serialization = _serialization()
    path = os.path.join(data, KEY_FILE)
    try:
        with open(path, "rb") as handle:
            pem = handle.read(MAX_HEAD_BYTES)
    except FileNotFoundError:
        raise ServiceError(
            f"{path}: missing: the service's signing key ('ember service init {data}' makes it)"
        ) from None
    except OSError as exc:
        raise ServiceError(f"{path}: cannot read the signing key: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ServiceError(f"{path}: not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ServiceError(f"{path}: expected an Ed25519 private key, got {type(key).__name__}")
    return key


# -- heads -------------------------------------------------------------------------------------


def signed_part(head):
    """The bytes a head's signature covers: the canonical JSON of ``{"at", "board", "hash", "seq"}``."""
    return canonical_json_reference({key: head[key] for key in ("at", "board", "hash", "seq")})


def sign_head(private_key, board, seq, digest, at):
    """The head object of board ``board`` whose last entry is ``seq`` with ``hash`` ``digest``, at time ``at``."""
    head = {"board": board, "seq": seq, "hash": digest, "at": at}
    return {**head, "signature": base64.b64encode(private_key.sign(signed_part(head))).decode("ascii")}


def head_bytes(head):
    """``log.head.json``'s bytes: the head's canonical JSON and a newline."""
    return canonical_json_reference(head) + b"\n"


def head_of_lines(private_key, lines, at):
    """The signed head of a log given as its lines (bytes, the last one the head's entry)."""
    last = json.loads(lines[-1])
    return sign_head(private_key, last["board"], last["seq"], last["hash"], at)


# -- checking ----------------------------------------------------------------------------------


def parse_public_key(text, shown_as="--public-key"):
    """The 32 raw bytes of K (base64, padded); ``@FILE`` reads K from FILE.  ``ServiceError`` (bad input) else."""
    where = shown_as
    if text.startswith("@"):
        path = text[1:]
        where = f"{shown_as} {text}"
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_HEAD_BYTES)
        except OSError as exc:
            raise ServiceError(f"{where}: cannot read the key file: {exc.strerror or exc}") from None
        try:
            text = data.decode("ascii").strip()
        except UnicodeDecodeError:
            raise ServiceError(
                f"{where}: expected the base64 of a 32-byte Ed25519 public key, got non-ASCII bytes"
            ) from None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = None
    if raw is None or len(raw) != PUBLIC_KEY_BYTES or base64.b64encode(raw).decode("ascii") != text:
        got = f"{len(raw)} bytes" if raw is not None else f"{text[:60]!r}"
        raise ServiceError(
            f"{where}: expected the base64 (RFC 4648, padded: 44 characters) of a 32-byte Ed25519 public key, got {got}"
        )
    return raw


def head_problem(head, public_key, where):
    """The one problem of a head object (parsed JSON) against a public key (32 raw bytes), or None."""
    if not isinstance(head, dict) or set(head) != set(HEAD_KEYS):
        keys = sorted(head) if isinstance(head, dict) else type(head).__name__
        return f"{where}: expected a head with keys {', '.join(HEAD_KEYS)}; got {keys}"
    if not isinstance(head["board"], str):
        return f"{where}: $.board: expected a string, got {shown(head['board'])}"
    if type(head["seq"]) is not int or head["seq"] < 1:
        return f"{where}: $.seq: expected an integer >= 1, got {shown(head['seq'])}"
    if not isinstance(head["hash"], str) or not HASH_PATTERN.fullmatch(head["hash"]):
        return f"{where}: $.hash: expected 64 lowercase hex characters, got {shown(head['hash'])}"
    if not isinstance(head["at"], str) or not AT_PATTERN.fullmatch(head["at"]):
        return f"{where}: $.at: expected YYYY-MM-DDTHH:MM:SS.ffffffZ, got {shown(head['at'])}"
    signature = head["signature"]
    try:
        raw = base64.b64decode(signature, validate=True) if isinstance(signature, str) else b""
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != SIGNATURE_BYTES:
        return f"{where}: $.signature: expected the base64 of a 64-byte Ed25519 signature, got {shown(signature)}"
    from cryptography.exceptions import InvalidSignature

    try:
        _ed25519().Ed25519PublicKey.from_public_bytes(public_key).verify(raw, signed_part(head))
    except InvalidSignature:
        return (
            f"{where}: the signature does not verify with the public key {key_text(public_key)}: "
            "the head is not the service's"
        )
    return None


def _read_head(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_HEAD_BYTES + 1)
    except FileNotFoundError:
        return None, f"{path}: missing: an export of a board holds its signed head"
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc}"
    if len(data) > MAX_HEAD_BYTES:
        return None, f"{path}: longer than {MAX_HEAD_BYTES:,} bytes: not a log head"
    try:
        head = strict_json(data)
    except ValueError as exc:
        return None, f"{path}: not a JSON text: {exc}"
    if not isinstance(head, dict) or set(head) != set(HEAD_KEYS):
        return head, None
    try:
        exact = head_bytes(head) == data
    except (TypeError, ValueError):
        exact = False
    if not exact:
        return None, f"{path}: not the head's canonical JSON and a newline (it was re-encoded)"
    return head, None


class HeadCheck:
    """What ``verify --public-key/--service`` found: ``problems`` (lines), ``notes`` (lines), the export's head."""

    def __init__(self):
        self.problems = []
        self.notes = []
        self.head = None


def _log_lines(log_path):
    with open(log_path, "rb") as handle:
        return handle.read().splitlines()


def check_export_head(directory, log_path, public_key, live=None):
    """Check the signed head of an export whose chain (``log_path``) already holds; returns a ``HeadCheck``.

    ``public_key``: K's 32 raw bytes; ``live``: a ``LiveService`` whose live head and log are checked too
    (its key is the caller's to compare with K).
    """
    found = HeadCheck()
    lines = _log_lines(log_path)
    entries, problems = check_log_entries(lines)
    if problems or not entries:
        found.problems.append(f"{log_path}: the chain does not hold; no head to check")
        return found
    where = os.path.join(directory, LOG_HEAD_FILE)
    head, problem = _read_head(where)
    problem = problem or head_problem(head, public_key, where)
    if problem is None:
        last = entries[-1]
        for key in ("board", "seq", "hash"):
            if head[key] != last[key]:
                problem = (
                    f"{where}: $.{key}: the chain ends at entry {last['seq']} ({key} {shown(last[key])}), "
                    f"the signed head says {shown(head[key])}"
                )
                break
    if problem is not None:
        found.problems.append(problem)
        return found
    found.head = head
    found.notes.append(f"ember verify: the log's head is signed: seq {head['seq']} at {head['at']}")
    if live is not None:
        try:
            _check_live(found, live, head, lines, public_key)
        except ServiceError as exc:
            found.problems.append(str(exc))
    return found


def _check_live(found, live, head, lines, public_key):
    board = head["board"]
    now = live.head(board)
    problem = head_problem(now, public_key, f"{live.url}/api/boards/{board}/log/head")
    if problem is not None:
        found.problems.append(problem)
        return
    if now["board"] != board or now["seq"] < head["seq"]:
        found.problems.append(
            f"{live.url}: the live log of board {board} ends at seq {now['seq']}, before this export's head "
            f"(seq {head['seq']}): the export is not of this service's log"
        )
        return
    served = live.log(board, len(lines))
    for number, (mine, theirs) in enumerate(zip(lines, served), 1):
        if mine != theirs:
            found.problems.append(f"{live.url}: the live log's entry {number} differs from this export's")
            return
    if len(served) < len(lines):
        found.problems.append(f"{live.url}: the live log served {len(served)} entries, this export has {len(lines)}")
        return
    if now["seq"] == head["seq"]:
        found.notes.append("ember verify: the live log holds this export's entries; its head is this export's head")
    else:
        found.notes.append(
            f"ember verify: the live log holds this export's entries; the live head is newer: seq {now['seq']} at "
            f"{now['at']} ({now['seq'] - head['seq']} entries after this export's head, seq {head['seq']} at "
            f"{head['at']})"
        )


class LiveService:
    """The few anonymous GETs ``verify --service`` makes (httpx; https, or http to a loopback address)."""

    def __init__(self, url, transport=None):
        try:
            import httpx
        except ImportError:
            raise MissingExtraError(f"--service needs httpx (the 'service' extra): {INSTALL}") from None

        from .client import check_url

        self.httpx = httpx
        self.url = str(check_url(url)).rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=httpx.Timeout(60.0, connect=10.0), transport=transport)

    def _get(self, path, **params):
        try:
            response = self.http.get(path, params=params or None)
        except self.httpx.HTTPError as exc:
            raise ServiceError(f"{self.url}{path}: {exc}") from None
        if response.status_code != 200:
            raise ServiceError(f"{self.url}{path}: HTTP {response.status_code}: {response.text[:200]!r}")
        return response

    def _json(self, path):
        response = self._get(path)
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{self.url}{path}: the answer is not JSON") from None

    def public_key(self):
        value = self._json("/api")
        text = value.get("public_key") if isinstance(value, dict) else None
        if not isinstance(text, str):
            raise ServiceError(f"{self.url}/api: no public_key: not a service of version 1.1 or later")
        return parse_public_key(text, f"{self.url}/api: public_key")

    def head(self, board):
        return self._json(f"/api/boards/{board}/log/head")

    def log(self, board, count, page=1000):
        """The live log's first ``count`` lines (bytes, fewer when it has fewer)."""
        lines = []
        while len(lines) < count:
            data = self._get(f"/api/boards/{board}/log", after=len(lines), limit=min(page, count - len(lines))).content
            got = data.splitlines()
            if not got:
                break
            lines += got
        return lines[:count]
