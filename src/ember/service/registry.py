"""The administrative side (service.md §2): the service directory, teams, tokens, boards.

Only commands on the machine that holds DATA call these; the HTTP API has
no administrative endpoint.  A token is ``ember_`` and 43 URL-safe
characters (256 random bits), printed once; only its SHA-256 is stored.
"""

import hashlib
import hmac
import os
import re
import secrets
from typing import NamedTuple

import sqlalchemy as sa

from ..canonical import canonical_json, canonical_json_reference
from ..errors import CampaignError, ServiceError
from ..scenario import ID_PATTERN
from ..versions import (
    METRICS_VERSION,
    OBSERVATION_VERSION,
    RANKING_VERSION,
    SIMULATOR_VERSION,
    STATISTICS_VERSION,
    package_version,
)
from . import anchor, audit, phases, tables
from .config import (
    CONFIG_FILE,
    DATA_MODE,
    DATABASE_VARIABLE,
    config_text,
    default_database,
    private_files,
    read_config,
)
from .database import Database

TEAM_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,23}")
TOKEN_PREFIX = "ember_"
#: The characters of a token kept to name it (``token revoke TEAM PREFIX``).
SHOWN_PREFIX = len(TOKEN_PREFIX) + 8
MAX_SEED = 2**63


# -- the service directory -------------------------------------------------------------


def init_service(data, database=None):
    """Make (or bring up to date) the service directory ``data``; returns the ``ServiceConfig``.

    On a new DATA (mode 0700): ``service.toml``, ``records/``, the database
    with every migration applied, the signing key pair (``anchor``), each its
    owner's alone (0600, 0700).  On an existing one: the pending migrations,
    and the key pair when it has none (a DATA made before service 1.1),
    nothing else.
    """
    with private_files():
        path = os.path.join(data, CONFIG_FILE)
        if not os.path.exists(path):
            url = database or os.environ.get(DATABASE_VARIABLE) or default_database(data)
            Database(url)  # a bad URL is refused before anything is written
            os.makedirs(data, exist_ok=True)
            os.chmod(data, DATA_MODE)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(config_text(url))
        config = read_config(data)
        os.makedirs(config.records, exist_ok=True)
        anchor.ensure_key(data)
        db = Database(config.database)
        try:
            db.migrate()
        finally:
            db.dispose()
    return config


def existing_service(data, database=None):
    """What ``init`` finds in ``data`` before it acts: None for a new DATA, else a ``Found``.

    A ``--database`` naming another database than the one ``service.toml`` holds is refused: ``init`` on a
    service directory never points it elsewhere.
    """
    if not os.path.exists(os.path.join(data, CONFIG_FILE)):
        return None
    config = read_config(data)
    if database is not None and database != config.database:
        shown = sa.engine.make_url(config.database).render_as_string(hide_password=True)
        raise ServiceError(
            f"{data}: a service directory already, on the database {shown}; --database names another: "
            "init never moves a service to another database"
        )
    db = Database(config.database)
    try:
        return Found(db.shown, db.pending(), os.path.exists(os.path.join(data, anchor.KEY_FILE)))
    finally:
        db.dispose()


def contents(db):
    """The number of boards, teams, submissions and jobs, in that order (a dict)."""
    with db.transaction(read=True) as connection:
        return {
            name: connection.execute(sa.select(sa.func.count()).select_from(getattr(tables, name))).scalar_one()
            for name in ("boards", "teams", "submissions", "jobs")
        }


class Found(NamedTuple):
    """An existing service directory: its database (password hidden), whether migrations were pending,
    whether it had its key pair."""

    database: str
    pending: bool
    had_key: bool


def open_service(data, migrated=True):
    """(``ServiceConfig``, ``Database``) of an existing service directory; with ``migrated`` a pending
    migration is refused (run ``ember service init DATA``)."""
    config = read_config(data)
    db = Database(config.database)
    if migrated and db.pending():
        db.dispose()
        raise ServiceError(f"{data}: the database has pending migrations: run 'ember service init {data}' first")
    return config, db


# -- teams and tokens -----------------------------------------------------------------


def token_sha256(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _team(connection, name):
    row = connection.execute(sa.select(tables.teams).where(tables.teams.c.folded == name.lower())).first()
    if row is None or row.name != name:
        raise ServiceError(f"team {name!r}: no such team")
    return row


def _new_token(connection, team_id):
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    connection.execute(
        sa.insert(tables.tokens).values(
            team_id=team_id, sha256=token_sha256(token), prefix=token[:SHOWN_PREFIX], created_at=audit.now()
        )
    )
    return token


def add_team(db, name):
    """Add team ``name``; returns its first token (printed once, never stored)."""
    if not isinstance(name, str) or not TEAM_PATTERN.fullmatch(name):
        raise ServiceError(f"team name {name!r}: expected [A-Za-z0-9][A-Za-z0-9_-]{{0,23}}")
    with db.transaction() as connection:
        taken = connection.execute(sa.select(tables.teams.c.name).where(tables.teams.c.folded == name.lower()))
        existing = taken.scalar()
        if existing is not None:
            raise ServiceError(f"team {name!r}: taken (by {existing!r}; names are unique ignoring case)")
        team_id = connection.execute(
            sa.insert(tables.teams).values(name=name, folded=name.lower(), created_at=audit.now())
        ).inserted_primary_key[0]
        return _new_token(connection, team_id)


def add_teams(db, names, deliver=None):
    """Add every team of ``names`` in one transaction; returns [(team, its first token)] in order (printed or
    written once, never stored).  ``names`` are (place, name) pairs: a refused name is an error naming its
    place (a file's line), and then nothing is added.  ``deliver(pairs)``, when given, is called before the
    commit: if it raises, no team is added."""
    folded = {}
    for place, name in names:
        if not isinstance(name, str) or not TEAM_PATTERN.fullmatch(name):
            raise ServiceError(f"{place}: team name {name!r}: expected [A-Za-z0-9][A-Za-z0-9_-]{{0,23}}")
        if name.lower() in folded:
            first, given = folded[name.lower()]
            raise ServiceError(
                f"{place}: team name {name!r}: given already as {given!r} at {first} (names are unique ignoring case)"
            )
        folded[name.lower()] = (place, name)
    if not folded:
        raise ServiceError("expected at least one team name, got none")
    c = tables.teams.c
    with db.transaction() as connection:
        taken = connection.execute(sa.select(c.folded, c.name).where(c.folded.in_(list(folded)))).first()
        if taken is not None:
            place, name = folded[taken.folded]
            raise ServiceError(f"{place}: team {name!r}: taken (by {taken.name!r}; names are unique ignoring case)")
        now = audit.now()
        made = []
        for _, name in folded.values():
            team_id = connection.execute(
                sa.insert(tables.teams).values(name=name, folded=name.lower(), created_at=now)
            ).inserted_primary_key[0]
            made.append((name, _new_token(connection, team_id)))
        if deliver is not None:
            deliver(made)
    return made


def add_token(db, name):
    with db.transaction() as connection:
        return _new_token(connection, _team(connection, name).id)


def revoke_tokens(db, name, prefix=None):
    """Revoke the team's tokens (all, or those starting with ``prefix``); returns how many."""
    with db.transaction() as connection:
        team = _team(connection, name)
        c = tables.tokens.c
        live = connection.execute(sa.select(c.id, c.prefix).where(c.team_id == team.id, c.revoked_at.is_(None)))
        chosen = [row.id for row in live if prefix is None or row.prefix.startswith(prefix[:SHOWN_PREFIX])]
        if prefix is not None and (len(prefix) < len(TOKEN_PREFIX) + 4 or not prefix.startswith(TOKEN_PREFIX)):
            raise ServiceError(f"token prefix {prefix!r}: expected the token's first characters, at least 'ember_XXXX'")
        if not chosen:
            raise ServiceError(f"team {name!r}: no live token" + (f" starting with {prefix!r}" if prefix else ""))
        connection.execute(sa.update(tables.tokens).where(c.id.in_(chosen)).values(revoked_at=audit.now()))
        return len(chosen)


def team_of_token(connection, token):
    """The team row a bearer token belongs to, or None (unknown, revoked, malformed, or its team disabled)."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    digest = token_sha256(token)
    c = tables.tokens.c
    found = connection.execute(
        sa.select(c.sha256, tables.teams)
        .join(tables.teams)
        .where(c.sha256 == digest, c.revoked_at.is_(None), tables.teams.c.disabled_at.is_(None))
    ).first()
    if found is None or not hmac.compare_digest(found.sha256, digest):
        return None
    return found


# -- boards ---------------------------------------------------------------------------


def board_versions():
    """The versions a board fixes at ``board add`` (service.md §2)."""
    return {
        "simulator": SIMULATOR_VERSION,
        "observation": OBSERVATION_VERSION,
        "metrics": METRICS_VERSION,
        "ranking": RANKING_VERSION,
        "statistics": STATISTICS_VERSION,
        "package": package_version(),
    }


def _load(path, document=None):
    from ..campaign import load_campaign

    try:
        return load_campaign(path, with_policies=False, document=document)
    except CampaignError as exc:
        raise ServiceError(str(exc)) from None


LIVE, FINAL = "live", "final"
KEY_SETS = (LIVE, FINAL)


def _hidden_campaign(path):
    """The hidden campaign file read (service.md §9): (campaign, {scenario position: (L, F)} of the scenarios
    whose ``seeds`` is ``{live = L, final = F}``).  Those seeds are read as ``L + F`` placeholders: the
    scenario's real seeds are secret and drawn at ``board add``."""
    from ..results.campaign_file import read_campaign_file
    from ..scenario import check_integer

    try:
        document = read_campaign_file(path)
    except CampaignError as exc:
        raise ServiceError(str(exc)) from None
    split = {}
    scenarios = document.get("scenarios")
    for i, item in enumerate(scenarios if isinstance(scenarios, list) else []):
        seeds = item.get("seeds") if isinstance(item, dict) else None
        if not isinstance(seeds, dict) or not set(seeds) & set(KEY_SETS):
            continue
        where = f"{path}: scenarios[{i}].seeds"
        if set(seeds) != set(KEY_SETS):
            raise ServiceError(f"{where}: expected a table {{live = L, final = F}}, got keys {sorted(seeds)}")

        def fail(place, message):
            raise ServiceError(f"{place}: {message}")

        counts = tuple(
            check_integer(seeds[key], f"{where}.{key}", 0, 10**6, fail, lambda v: type(v).__name__, str)
            for key in KEY_SETS
        )
        if sum(counts) < 1:
            raise ServiceError(f"{where}: expected live + final >= 1, got live = 0 and final = 0")
        split[i] = counts
        item["seeds"] = {"start": 0, "count": sum(counts)}
    return _load(path, document), split


def _secret_seeds(count):
    seeds = set()
    while len(seeds) < count:
        seeds.add(secrets.randbelow(MAX_SEED))
    return sorted(seeds)


def commitment_of(keys, salt):
    """service.md §6, §9: SHA-256 of the canonical JSON of {"keys", "salt"}, keys sorted by (scenario_id,
    scenario_hash, seed as a number); a key is [scenario_id, scenario_hash, seed] or, tagged with its set,
    [scenario_id, scenario_hash, seed, set]."""
    ordered = sorted([list(key) for key in keys], key=lambda key: (key[0], key[1], key[2]))
    return hashlib.sha256(canonical_json_reference({"keys": ordered, "salt": salt})).hexdigest()


def add_board(db, name, campaign_file, hidden_file=None, opens=None, closes=None, reveal_at=None, description=None):
    """Add board ``name`` from a campaign file's scenarios and seeds (and a hidden track); returns its dict.

    ``opens``, ``closes``, ``reveal_at``: its phases (ISO 8601 UTC text, each optional; ``phases``);
    ``description``: the operator's words about the board."""
    if not isinstance(name, str) or not ID_PATTERN.fullmatch(name):
        raise ServiceError(f"board name {name!r}: expected an ID ([A-Za-z0-9][A-Za-z0-9._-]{{0,63}})")
    about = phases.board_columns(opens, closes, reveal_at, description, hidden_file is not None)
    campaign = _load(campaign_file)
    versions = board_versions()
    open_track = [
        {"scenario_id": e.scenario_id, "scenario_hash": e.scenario_hash, "seeds": list(e.seeds)}
        for e in campaign.scenarios
    ]
    hidden = secret = commitment = None
    hidden_entries, hidden_seeds, learnable = [], [], []
    if hidden_file is not None:
        loaded, split = _hidden_campaign(hidden_file)
        hidden_entries = loaded.scenarios
        # A file that names no {live, final} makes a board as under 1.0: every key live, untagged, counted.
        tagged = bool(split)
        keys = []
        public = []
        for i, entry in enumerate(hidden_entries):
            live, final = split.get(i, (len(entry.seeds), 0))
            if i not in split:
                learnable.append(entry.scenario_id)
            seeds = _secret_seeds(live + final)
            if tagged:
                # The first L (ascending) are live, the rest final (service.md §9).
                sets = [LIVE] * live + [FINAL] * final
                keys += [[entry.scenario_id, entry.scenario_hash, seed, s] for seed, s in zip(seeds, sets)]
                shown = {LIVE: live, FINAL: final}
            else:
                keys += [[entry.scenario_id, entry.scenario_hash, seed] for seed in seeds]
                shown = len(seeds)
            hidden_seeds.append(shown)
            public.append({"scenario_id": entry.scenario_id, "scenario_hash": entry.scenario_hash, "seeds": shown})
        salt = secrets.token_hex(32)
        commitment = commitment_of(keys, salt)
        hidden = {"scenarios": public, "commitment": commitment}
        secret = {"keys": sorted(keys, key=lambda key: (key[0], key[1], key[2])), "salt": salt}
    with db.transaction() as connection:
        if connection.execute(sa.select(tables.boards.c.id).where(tables.boards.c.name == name)).first():
            raise ServiceError(f"board {name!r}: exists already (a board is immutable)")
        board_id = connection.execute(
            sa.insert(tables.boards).values(
                name=name,
                versions=canonical_json_reference(versions),
                hidden=None if hidden is None else canonical_json_reference(hidden),
                hidden_secret=None if secret is None else canonical_json_reference(secret),
                version=0,
                created_at=audit.now(),
                **about,
            )
        ).inserted_primary_key[0]
        for track, entries in (("open", campaign.scenarios), ("hidden", hidden_entries)):
            for position, entry in enumerate(entries):
                seeds = list(entry.seeds) if track == "open" else hidden_seeds[position]
                connection.execute(
                    sa.insert(tables.scenarios).values(
                        board_id=board_id,
                        track=track,
                        position=position,
                        scenario_id=entry.scenario_id,
                        scenario_hash=entry.scenario_hash,
                        data=canonical_json(entry.data),
                        seeds=canonical_json_reference(seeds),
                    )
                )
        data = {"versions": versions, "scenarios": open_track, "hidden_commitment": commitment}
        audit.append(connection, board_id, "board", data=data)
    # ``learnable``: the hidden scenarios whose ranking comes from the keys that gave their own feedback.
    return {
        "name": name, "versions": versions, "scenarios": open_track, "hidden": hidden, "learnable": learnable,
        **about,
    }  # fmt: skip
