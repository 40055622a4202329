"""Campaign file (campaign.md §2) -> resolved campaign, validated up front.

Every scenario is loaded, validated and hashed here, every ``records``
folder looked at, and (``check_python_policies``, once the sandbox mode is
known) every ``python`` module imported once, by EMBER's host in a policy
process: a campaign that would fail on its own terms fails before any
episode runs, with a message that names the place
(``campaign.toml: policies[1].agent: ...``).
"""

import math
import os
import re
import shlex

from ..agent import DEFAULT_STEP_TIMEOUT, MAX_STEP_TIMEOUT  # campaign.md §1: the default of 'ember run --agent' too
from ..canonical import split_module_name
from ..errors import CampaignError, ScenarioError
from ..isolation.boundary import check_python_source
from ..isolation.environment import FIXED_ENVIRONMENT
from ..isolation.sandbox import MAX_MEMORY_MB
from ..results import POLICY_KINDS
from ..results.campaign_file import read_campaign_file
from ..scenario import BUILTIN_PREFIX, ID_PATTERN, check_integer, compile_scenario
from ..sim import policies as builtin_policies
from . import processes
from .code import bound_code, code_hash
from .launchers import policy_launcher

#: What an episode process may spend outside a policy's answers (making a python policy, the
#: simulator's steps, the metrics), or step_timeout if larger; also the bound on checking a module.
WORK_TIMEOUT_S = 60.0
MAX_SEED = 2**63 - 1  # TOML integers
#: More seeds than this for one scenario is refused: the episode set is held in memory.
MAX_SEEDS_PER_SCENARIO = 1_000_000
#: More runs (episodes of K x policies) than this in one campaign is refused up front: the
#: command keeps about 50 bytes per episode of K, and a campaign this large would take weeks.
MAX_CAMPAIGN_RUNS = 10_000_000
SOURCES = POLICY_KINDS  # a campaign file's sources are campaign.json's policy kinds
#: The sandbox's keys of an agent or python policy (isolation.md §2), stored in campaign.json as written.
SANDBOX_KEYS = ("memory_mb", "max_processes", "tmp_mb", "episode_timeout", "env", "files")
MAX_PROCESSES = 65536
MAX_TMP_MB = 65536
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOP_KEYS = ("campaign", "seeds", "scenarios", "policies")


class ScenarioEntry:
    """One scenario of a campaign: its validated data, hash, source string and seeds."""

    def __init__(self, data, source, seeds):
        compiled = compile_scenario(data)
        self.data = compiled.data
        self.scenario_id = compiled.scenario_id
        self.scenario_hash = compiled.hash
        self.source = source
        self.seeds = seeds

    def resolved(self):
        return {
            "scenario_id": self.scenario_id,
            "scenario_hash": self.scenario_hash,
            "source": self.source,
            "seeds": list(self.seeds),
        }


class ResolvedCampaign:
    """A validated campaign: its folder, scenarios (``ScenarioEntry``) and policies (campaign.json dicts)."""

    def __init__(self, path, name, scenarios, policies, code_lists=None):
        self.path = os.path.abspath(path)
        self.folder = os.path.dirname(self.path)
        self.name = name
        self.scenarios = scenarios
        self.policies = policies
        #: An agent or python policy's name -> its code list (``code.bound_code``), whose hash is its ``code``.
        self.code_lists = code_lists or {}


def _fail(where, message):
    raise CampaignError(f"{where}: {message}")


def _type_name(value):
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _shown(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _table(value, where, required, optional=()):
    if not isinstance(value, dict):
        _fail(where, f"expected a table, got {_type_name(value)}.")
    allowed = tuple(required) + tuple(optional)
    for key in value:
        if key not in allowed:
            _fail(f"{where}.{key}" if where else key, f"unknown key; expected {' or '.join(map(repr, allowed))}.")
    for key in required:
        if key not in value:
            _fail(where or "campaign file", f"missing required key {key!r}.")


def _typed(value):
    return f"{_type_name(value)} {_shown(value)}"


def _identifier(value, where):
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        _fail(where, f"expected an ID matching [A-Za-z0-9][A-Za-z0-9._-]{{0,63}}, got {_shown(value)}.")
    return value


def _string(value, where):
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {_typed(value)}.")
    return value


def _int(value, where, low, high):
    return check_integer(value, where, low, high, _fail, _typed, str)


def parse_seeds(value, where):
    """A seeds value (campaign.md §2) -> the ascending list of distinct seeds."""
    if isinstance(value, list):
        if not value:
            _fail(where, "expected a non-empty array of seeds, got an empty array.")
        if len(value) > MAX_SEEDS_PER_SCENARIO:
            _fail(where, f"at most {MAX_SEEDS_PER_SCENARIO:,} seeds per scenario, got {len(value):,}.")
        seen = set()
        for i, seed in enumerate(value):
            _int(seed, f"{where}[{i}]", 0, MAX_SEED)
            if seed in seen:
                _fail(f"{where}[{i}]", f"seed {seed} is listed twice; seeds must be distinct.")
            seen.add(seed)
        return sorted(value)
    if isinstance(value, dict):
        _table(value, where, ("start", "count"))
        start = _int(value["start"], f"{where}.start", 0, MAX_SEED)
        count = _int(value["count"], f"{where}.count", 1, MAX_SEEDS_PER_SCENARIO)
        if start + count - 1 > MAX_SEED:
            _fail(where, f"seeds {start}..{start + count - 1} go past the largest seed 2^63 - 1.")
        return list(range(start, start + count))
    _fail(where, f"expected an array of seeds or a table {{start, count}}, got {_typed(value)}.")


def _load_scenario(source, folder, where):
    _string(source, where)
    if not source:
        _fail(where, "expected builtin:NAME or a path, got an empty string.")
    target = source if source.startswith(BUILTIN_PREFIX) else os.path.join(folder, source)
    try:
        return compile_scenario(target).data
    except ScenarioError as exc:
        _fail(where, f"scenario {source!r}: {exc}")


def _scenarios(value, folder, default_seeds):
    if not isinstance(value, list):
        _fail("scenarios", f"expected a non-empty array, got {_type_name(value)}.")
    if not value:
        _fail("scenarios", "expected a non-empty array, got an empty array.")
    entries, by_hash, by_id = [], {}, {}
    for i, item in enumerate(value):
        where = f"scenarios[{i}]"
        if isinstance(item, dict):
            _table(item, where, ("source",), ("seeds",))
            data = _load_scenario(item["source"], folder, f"{where}.source")
            source = item["source"]
            if "seeds" in item:
                seeds = parse_seeds(item["seeds"], f"{where}.seeds")
            elif default_seeds is None:
                _fail(where, "no seeds: give the scenario its own 'seeds' or the campaign top-level 'seeds'.")
            else:
                seeds = default_seeds
        elif isinstance(item, str):
            data = _load_scenario(item, folder, where)
            source = item
            if default_seeds is None:
                _fail(
                    where, "no seeds: give the scenario a table with its own 'seeds' or the campaign top-level 'seeds'."
                )
            seeds = default_seeds
        else:
            _fail(
                where, f"expected a string (builtin:NAME or a path) or a table with 'source', got {_type_name(item)}."
            )
        entry = ScenarioEntry(data, source, seeds)
        if entry.scenario_hash in by_hash:
            _fail(
                where,
                f"the scenario's content hash repeats scenarios[{by_hash[entry.scenario_hash]}] "
                f"({entry.scenario_hash}).",
            )
        if entry.scenario_id in by_id:
            _fail(
                where,
                f"scenario ID {entry.scenario_id!r} is also scenarios[{by_id[entry.scenario_id]}]'s, "
                "with another content hash.",
            )
        by_hash[entry.scenario_hash] = by_id[entry.scenario_id] = i
        entries.append(entry)
    return entries


def _check_python(text, where):
    module_name, name = split_module_name(text)
    if not module_name or not name:
        _fail(where, f"expected MODULE:NAME, got {_shown(text)}.")


def foreign_policies(policies):
    """The agent and python entries of a campaign's policies."""
    return [entry for entry in policies if "agent" in entry or "python" in entry]


def check_python_policies(campaign, mode):
    """Every python policy's MODULE imports and has a callable NAME (campaign.md §2), checked by EMBER's host
    in a policy process started as the episodes' are (the sandbox with ``required``): importing is running
    foreign code.  Raises ``CampaignError`` naming the place."""
    checked = [(i, entry) for i, entry in enumerate(campaign.policies) if "python" in entry]
    if not checked:
        return
    # Without the sandbox's cgroups, what an import starts and abandons comes back here and is ended.
    keep = processes.children()
    adopting = not processes.is_subreaper() and processes.become_subreaper()
    try:
        for i, entry in checked:
            launcher = policy_launcher(entry, campaign.folder, mode, own_session=True)
            problem = check_python_source(entry["python"], launcher, work_timeout(entry["step_timeout"]))
            if problem is not None:
                raise CampaignError(f"{campaign.path}: policies[{i}].python: {problem}")
    finally:
        if adopting:
            processes.end_orphans(keep)
            processes.stop_being_subreaper()


def work_timeout(step_timeout):
    """The bound on an episode process's work outside the policy's answers (and on checking a module)."""
    return max(WORK_TIMEOUT_S, step_timeout)


def _step_timeout(value, where):
    if type(value) not in (int, float):  # a boolean is not a number of seconds
        _fail(where, f"expected a number of seconds, got {_typed(value)}.")
    if not (math.isfinite(value) and value > 0):
        _fail(where, f"expected a finite number of seconds > 0, got {value!r}.")
    if value > MAX_STEP_TIMEOUT:
        _fail(where, f"expected at most {MAX_STEP_TIMEOUT:g} seconds (one day), got {value!r}.")
    return float(value)


def _policies(value, folder, code_lists):
    if not isinstance(value, list):
        _fail("policies", f"expected a non-empty array of tables ([[policies]]), got {_type_name(value)}.")
    if not value:
        _fail("policies", "expected a non-empty array of tables ([[policies]]), got an empty array.")
    entries, names = [], {}
    for i, item in enumerate(value):
        where = f"policies[{i}]"
        _table(item, where, ("name",), SOURCES + ("step_timeout",) + SANDBOX_KEYS)
        name = _identifier(item["name"], f"{where}.name")
        if name in names:
            _fail(f"{where}.name", f"policy name {name!r} is also policies[{names[name]}]'s; names must be unique.")
        names[name] = i
        sources = [key for key in SOURCES if key in item]
        if len(sources) != 1:
            found = "none" if not sources else " and ".join(sources)
            _fail(where, f"expected exactly one source of {', '.join(SOURCES)}, got {found}.")
        kind = sources[0]
        text = _string(item[kind], f"{where}.{kind}")
        if "step_timeout" in item and kind not in ("agent", "python"):
            _fail(f"{where}.step_timeout", f"step_timeout applies only to agent and python policies, not {kind}.")
        entry = {"name": name, kind: text}
        if kind == "builtin":
            known = builtin_policies.POLICY_NAMES
            if text not in known:
                _fail(f"{where}.builtin", f"unknown built-in policy {text!r}; expected one of {', '.join(known)}.")
        elif kind == "records":
            if not text or not os.path.isdir(os.path.join(folder, text)):
                _fail(f"{where}.records", f"folder {text!r} does not exist (relative to {folder}).")
        elif kind == "python":
            _check_python(text, f"{where}.python")
        else:
            try:
                argv = shlex.split(text)
            except ValueError as exc:
                _fail(f"{where}.agent", f"cannot split {_shown(text)} into words: {exc}.")
            if not argv:
                _fail(f"{where}.agent", "the agent command is empty.")
        if kind in ("agent", "python"):
            entry["step_timeout"] = _step_timeout(
                item.get("step_timeout", DEFAULT_STEP_TIMEOUT), f"{where}.step_timeout"
            )
        entry.update(_sandbox_keys(item, kind, where, folder))
        if kind in ("agent", "python"):
            # Its links checked and its files hashed before anything runs (isolation.md §2 Links).
            code_lists[name] = bound_code(entry, folder, where)
            entry["code"] = code_hash(code_lists[name])
        entries.append(entry)
    return entries


def _sandbox_keys(item, kind, where, folder):
    """The sandbox's keys of a policy table (isolation.md §2), checked; only those written are kept."""
    kept = {}
    for key in SANDBOX_KEYS:
        if key not in item:
            continue
        place, value = f"{where}.{key}", item[key]
        if kind not in ("agent", "python") or (key == "files" and kind != "agent"):
            allowed = "agent policies" if key == "files" else "agent and python policies"
            _fail(place, f"{key} applies only to {allowed}, not {kind}.")
        if key == "memory_mb":
            kept[key] = _int(value, place, 1, MAX_MEMORY_MB)
        elif key == "max_processes":
            kept[key] = _int(value, place, 1, MAX_PROCESSES)
        elif key == "tmp_mb":
            kept[key] = _int(value, place, 1, MAX_TMP_MB)
        elif key == "episode_timeout":
            kept[key] = _step_timeout(value, place)
        elif key == "env":
            kept[key] = _environment(value, place)
        else:
            kept[key] = _files(value, place, folder)
    return kept


def _environment(value, where):
    if not isinstance(value, dict):
        _fail(where, f"expected a table of strings, got {_type_name(value)}.")
    for name, text in value.items():
        if not _ENV_NAME.fullmatch(name):
            _fail(f"{where}.{name}", "expected a variable name ([A-Za-z_][A-Za-z0-9_]*).")
        if name in FIXED_ENVIRONMENT:
            _fail(f"{where}.{name}", f"the sandbox sets {name} itself; a policy's env adds variables of its own.")
        if not isinstance(text, str) or "\0" in text:
            _fail(f"{where}.{name}", f"expected a string without NUL, got {_typed(text)}.")
    return dict(value)


def _files(value, where, folder):
    if not isinstance(value, list) or not value:
        _fail(where, f"expected a non-empty array of paths relative to {folder}, got {_typed(value)}.")
    for i, path in enumerate(value):
        place = f"{where}[{i}]"
        if not isinstance(path, str) or not path:
            _fail(place, f"expected a path relative to the campaign folder, got {_typed(path)}.")
        full = os.path.normpath(os.path.join(folder, path))
        if os.path.isabs(path) or not full.startswith(folder.rstrip(os.sep) + os.sep):
            _fail(place, f"expected a path inside the campaign folder {folder}, got {_shown(path)}.")
        if not os.path.exists(full):
            _fail(place, f"{path!r} does not exist (relative to {folder}).")
    return list(value)


def check_size(episodes, policies, where):
    """Refuse a campaign of more than ``MAX_CAMPAIGN_RUNS`` runs (|K| episodes x |P| policies)."""
    runs = episodes * policies
    if runs > MAX_CAMPAIGN_RUNS:
        _fail(
            where,
            f"{episodes:,} episodes x {policies:,} policies = {runs:,} runs; at most {MAX_CAMPAIGN_RUNS:,} runs "
            "are allowed in one campaign (split it into several campaigns).",
        )


def load_campaign(path, with_policies=True, document=None):
    """Read and validate a campaign file; raises ``CampaignError`` naming the place.

    ``with_policies=False`` (a service board, service.md §2): ``policies`` may
    be absent and is never read; the campaign's policies are then empty.
    ``document``: the file's TOML already read (and adapted: a hidden track's seeds, service.md §9).
    """
    path = os.fspath(path)
    document = read_campaign_file(path) if document is None else document
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if with_policies:
            _table(document, "", _TOP_KEYS[:1] + _TOP_KEYS[2:], ("seeds",))
        else:
            _table(document, "", ("campaign", "scenarios"), ("seeds", "policies"))
        name = _identifier(document["campaign"], "campaign")
        seeds = parse_seeds(document["seeds"], "seeds") if "seeds" in document else None
        scenarios = _scenarios(document["scenarios"], folder, seeds)
        code_lists = {}
        policies = _policies(document["policies"], folder, code_lists) if with_policies else []
        check_size(sum(len(entry.seeds) for entry in scenarios), max(len(policies), 1), "campaign file")
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None
    return ResolvedCampaign(path, name, scenarios, policies, code_lists)
