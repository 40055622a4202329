"""A resumed campaign (campaign.md §3): what may differ from the campaign.json of a results directory.

A resume may add policies, scenarios and seeds; anything else that differs
is refused with the first difference, before anything is written.  The
directory itself is written by ``ember.results.writer``.
"""

import json

from ..errors import CampaignError
from .code import first_difference

#: campaign.json versions that must match on resume; "package" may differ.
RESULT_VERSIONS = ("simulator", "observation", "metrics", "ranking")


# -- comparing a resumed campaign -------------------------------------------------------


def merge_campaign(old, new, where, code_lists=None, old_code_list=None, adopt_code=False, adopted=None):
    """The campaign.json of a resume: ``old`` plus what ``new`` adds.

    Any other change is a CampaignError naming the first difference.  A
    policy's ``code`` must be the same (``code_lists``: its code list now,
    by name; ``old_code_list(name, code)``: the one kept with the rows, or
    None, to name the first file that differs); a policy of ``old`` without
    ``code`` (made before campaign 1.1) is refused unless ``adopt_code``,
    which takes today's code for it and appends its name to ``adopted``.
    """

    def refuse(text):
        raise CampaignError(f"{where} differs from the campaign file: {text}; results of two campaigns never mix.")

    if old["campaign"] != new["campaign"]:
        refuse(f"campaign is {old['campaign']!r} there, {new['campaign']!r} now")
    for key in RESULT_VERSIONS:
        if old["versions"].get(key) != new["versions"][key]:
            refuse(f"versions.{key} is {old['versions'].get(key)!r} there, {new['versions'][key]!r} now")
    new_scenarios = {sc["scenario_id"]: sc for sc in new["scenarios"]}
    scenarios = []
    for i, sc, now in _namesakes(old["scenarios"], new_scenarios, "scenario_id", "scenarios", refuse):
        if now["scenario_hash"] != sc["scenario_hash"]:
            refuse(
                f"scenarios[{i}] ({sc['scenario_id']}) has content hash {sc['scenario_hash']} there, "
                f"{now['scenario_hash']} now"
            )
        seeds, dropped = _seed_union(sc["seeds"], now["seeds"])
        if dropped is not None:
            refuse(f"scenarios[{i}] ({sc['scenario_id']}) lost seed {dropped} (a resume may only add seeds)")
        scenarios.append(dict(now, seeds=seeds))
    for sc in new["scenarios"]:
        if sc["scenario_id"] in new_scenarios:
            if any(sc["scenario_hash"] == kept["scenario_hash"] for kept in scenarios):
                refuse(f"scenario {sc['scenario_id']} has the content hash of another scenario there")
            scenarios.append(sc)
    new_policies = {p["name"]: p for p in new["policies"]}
    policies = []
    for i, policy, now in _namesakes(old["policies"], new_policies, "name", "policies", refuse):
        if _without_code(now) != _without_code(policy):
            refuse(f"policies[{i}] ({policy['name']}) is {_source(policy)} there, {_source(now)} now")
        if "code" in now and "code" not in policy:
            if not adopt_code:
                raise CampaignError(
                    f"{where}: policies[{i}] ({policy['name']}) has no code (its rows were written before "
                    f"campaign 1.1): run again with --adopt-code to record today's code {now['code']} for them."
                )
            policy = dict(policy, code=now["code"])
            if adopted is not None:
                adopted.append(policy["name"])
        elif "code" in now and now["code"] != policy["code"]:
            name = policy["name"]
            kept = None if old_code_list is None else old_code_list(name, policy["code"])
            mine = (code_lists or {}).get(name)
            changed = None if kept is None or mine is None else first_difference(kept, mine)
            if changed is None:
                changed = f"code {policy['code']} there, {now['code']} now"
            raise CampaignError(
                f"{where}: policy {name}'s code changed since its rows were written: {changed}; "
                "rows of two versions of one policy never mix."
            )
        policies.append(policy)
    policies.extend(p for p in new["policies"] if p["name"] in new_policies)
    return {"campaign": new["campaign"], "versions": new["versions"], "scenarios": scenarios, "policies": policies}


def _seed_union(old, new):
    """(the ascending union of two seed lists, the smallest seed of ``old`` missing from ``new`` or None).

    A resume may only add seeds, so a union without a lost seed holds
    ``new``'s seeds alone: it is ``new`` itself when ``new`` ascends (as the
    campaign file's seeds do, a ``range`` or an ``array('q')``, kept compact:
    docs/campaigns.md, "Bounded memory"), never a new list of them.  Both
    ascending: one walk, no set of a million seeds.  Otherwise, with sets.
    """
    if not (_ascending(old) and _ascending(new)):
        dropped = sorted(set(old) - set(new))
        return sorted(set(old) | set(new)), (dropped[0] if dropped else None)
    i = 0
    for seed in new:
        if i == len(old):
            break
        if old[i] < seed:
            return None, old[i]
        if old[i] == seed:
            i += 1
    if i < len(old):
        return None, old[i]
    return new, None


def _ascending(seeds):
    if isinstance(seeds, range):
        return seeds.step > 0 or len(seeds) < 2
    return all(seeds[k - 1] < seeds[k] for k in range(1, len(seeds)))


def _namesakes(old, new_by_name, key, what, refuse):
    """Each entry of ``old`` with its index and its namesake, popped from ``new_by_name``.

    A name missing from ``new_by_name`` is refused (a resume may only add);
    the names left in ``new_by_name`` are what the new campaign adds.
    """
    for i, entry in enumerate(old):
        now = new_by_name.pop(entry[key], None)
        if now is None:
            refuse(f"{what}[{i}] ({entry[key]}) is missing from the campaign file (a resume may only add)")
        yield i, entry, now


def _without_code(policy):
    return {key: value for key, value in policy.items() if key != "code"}


def _source(policy):
    shown = ", ".join(f"{k} = {json.dumps(v)}" for k, v in policy.items() if k not in ("name", "code"))
    return shown or "without a source"
