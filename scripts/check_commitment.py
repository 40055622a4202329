#!/usr/bin/env python3
"""Check an EMBER board's hidden-track commitment (service.md §6) with nothing but the standard library.

    python3 scripts/check_commitment.py https://HOST BOARD

It reads ``GET /api/boards/BOARD`` (the published ``commitment`` and, after
the reveal, the keys and salt) and the board's first log entry, and
recomputes the commitment: the lowercase hex SHA-256 of the canonical JSON
(sorted keys, no spaces, UTF-8) of ``{"keys": [[scenario_id, scenario_hash,
seed] or [..., seed, set], ...], "salt": SALT}``, the keys sorted by (scenario_id,
scenario_hash, seed) with the seed compared as a number.  Exit 0 when it
matches both the board's and the first log entry's, 1 when it does not, 2
when there is nothing to check yet (no hidden track, not revealed).
``ember service check-commitment URL BOARD`` does the same.
"""

import hashlib
import json
import sys
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 (the URL is the user's)
        return answer.read()


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def main(url, board):
    base = url.rstrip("/")
    public = json.loads(get(f"{base}/api/boards/{board}"))
    first = json.loads(get(f"{base}/api/boards/{board}/log?limit=1").splitlines()[0])
    hidden = public.get("hidden")
    if not hidden or not hidden.get("revealed"):
        print(f"board {board}: no revealed hidden track to check", file=sys.stderr)
        return 2
    keys = sorted(hidden["revealed"]["keys"], key=lambda key: (key[0], key[1], key[2]))
    recomputed = hashlib.sha256(canonical({"keys": keys, "salt": hidden["revealed"]["salt"]})).hexdigest()
    logged = (first.get("data") or {}).get("hidden_commitment")
    holds = recomputed == hidden["commitment"] == logged
    print(f"board {board}: recomputed {recomputed}; published {hidden['commitment']}; first log entry {logged}")
    print("the commitment holds" if holds else "the commitment does NOT hold")
    return 0 if holds else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
