"""A policy's code list in a results directory (``code/<policy>.json``) and the hash that names it.

campaign.json's ``code`` of an agent or python policy (campaign.md,
Changed in 1.1) is ``code_hash`` of its code list: the ``[path,
sha256-hex]`` pairs of its files.  The list itself is kept beside it, as
its canonical JSON and a newline, so that a resume whose code changed can
name the first file that differs; a list whose hash is not the policy's
``code`` (changed, or missing) is not believed, and only the hashes are compared.
"""

import hashlib
import os

from ..canonical import canonical_json_reference
from ..errors import ResultsError
from ..strict_json import strict_json
from .campaign_json import MAX_CAMPAIGN_BYTES
from .layout import code_file
from .reader import open_regular

CODE_PREFIX = "sha256:"


def code_bytes(code_list):
    """The canonical JSON of a code list: what ``code_hash`` hashes."""
    return canonical_json_reference(code_list)


def code_hash(code_list):
    """campaign.json's ``code`` of a code list: ``sha256:`` + the SHA-256 of its canonical JSON."""
    return CODE_PREFIX + hashlib.sha256(code_bytes(code_list)).hexdigest()


def read_code_list(directory, policy, code):
    """The code list kept for ``policy`` in the results ``directory`` when it hashes to ``code``, else None."""
    name = code_file(policy)
    path = os.path.join(directory, name)
    if not os.path.lexists(path):
        return None
    try:
        with open_regular(path, name, directory) as handle:
            data = handle.read(MAX_CAMPAIGN_BYTES + 1)
    except (ResultsError, OSError):
        return None
    if not data.endswith(b"\n") or code_hash_of_bytes(data[:-1]) != code:
        return None
    try:
        value = strict_json(data[:-1])
    except ValueError:
        return None
    fits = isinstance(value, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair) for pair in value
    )
    return value if fits else None


def code_hash_of_bytes(data):
    return CODE_PREFIX + hashlib.sha256(data).hexdigest()
