"""A participant's bundle tools: ``ember bundle DIR -o FILE`` makes an agent bundle the way the service reads
one, and ``ember bundle check FILE --scenario S`` runs it here, in the sandbox, on a public seed — so a
bundle that the service would refuse, or that cannot start, is found before a daily job is spent on it.

Both apply the service's own checks (``bundles.check_bundle``, with the default limits): a bundle they
accept passes the service's checks too.  The team's name counts towards the policy name's length
(``TEAM.NAME``): without ``--team`` the longest team name is assumed, so the bundle fits any team.
"""

import gzip
import io
import json
import os
import shutil
import stat
import tarfile
import tempfile

from ..errors import OutputPathError, ServiceError
from ..files import output_file
from .config import ServiceLimits
from .errors import ServiceRefusal
from .hidden.bundles import MANIFEST, RESERVED, check_bundle, extract_bundle
from .hidden.jobs import CAMPAIGN_NAME

#: The longest team name (service.md §2): a bundle checked with it fits every team's policy name.
LONGEST_TEAM = "t" * 24


def _members(folder):
    """(archive name, path) of every file and folder under ``folder``, sorted; links and other kinds refused."""
    found = []
    for where, folders, files in os.walk(folder):
        folders.sort()
        for name in sorted(folders) + sorted(files):
            path = os.path.join(where, name)
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise ServiceError(f"{path}: a symbolic link (a bundle holds regular files and folders only)")
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise ServiceError(f"{path}: not a regular file or a folder (a bundle holds only those)")
            if relative in RESERVED:
                raise ServiceError(f"{path}: {relative} is a name the service keeps for itself")
            found.append((relative, path, info))
    return found


def make_bundle(folder, out, team=None, limits=None):
    """Write the folder ``folder`` (holding ``ember-agent.toml``) as a bundle at ``out``; returns the
    ``Manifest``.  The archive is reproducible: members sorted, owner 0, time 0, modes 0644/0755."""
    if not os.path.isdir(folder):
        raise ServiceError(f"{folder}: expected a folder holding {MANIFEST}")
    if not os.path.isfile(os.path.join(folder, MANIFEST)):
        raise ServiceError(f"{folder}: no {MANIFEST} at its top level (docs/service.md, 'What a participant submits')")
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as archive:
        for name, path, info in _members(folder):
            member = tarfile.TarInfo(name)
            member.mtime = 0
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            if stat.S_ISDIR(info.st_mode):
                member.type, member.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(member)
            else:
                member.size, member.mode = info.st_size, 0o755 if info.st_mode & 0o100 else 0o644
                with open(path, "rb") as handle:
                    archive.addfile(member, handle)
    data = raw.getvalue()
    # Checked as a file beside the output (where the output must fit anyway), before the output is written.
    try:
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(os.path.abspath(out)), prefix=".ember-bundle-") as copy:
            copy.write(data)
            copy.flush()
            manifest = check(copy.name, folder, team, limits)
    except OSError as exc:
        raise OutputPathError(f"{out}: {exc.strerror or exc}") from None
    with output_file(out) as stream:
        stream.write(data)
    return manifest


def check(path, shown=None, team=None, limits=None):
    """The service's checks of the bundle at ``path``: its ``Manifest``; ``ServiceError`` naming ``shown``."""
    try:
        manifest, _ = check_bundle(path, team or LONGEST_TEAM, limits or ServiceLimits())
    except ServiceRefusal as exc:
        raise ServiceError(f"{shown or path}: the service would refuse it: {exc}") from None
    return manifest


class LocalRun:
    """What ``bundle check`` found: the episode's row (``status``, ``error`` or the safety counts)."""

    def __init__(self, manifest, scenario, seed, row):
        self.manifest, self.scenario, self.seed, self.row = manifest, scenario, seed, row

    @property
    def ok(self):
        return self.row["status"] == "ok"

    def line(self):
        where = f"{self.manifest.name} on {self.scenario} seed {self.seed}, in the sandbox"
        if not self.ok:
            return f"{where}: {self.row['status']}: {self.row.get('error')}"
        safety = self.row["metrics"]["safety"]
        return (
            f"{where}: ok (evacuated {safety['evacuated']}, casualties {safety['casualties']}, stranded "
            f"{safety['stranded']}); the service runs it the same way on its hidden seeds"
        )


def check_locally(bundle, scenario, seed=0, team=None, sandbox="required"):
    """Run the bundle at ``bundle`` here on one episode of ``scenario`` (a public seed), as a job runs it:
    unpacked as the service unpacks it, its policy entry made from its manifest, the campaign in the
    sandbox.  Returns a ``LocalRun``."""
    import tomli_w

    from ..campaign.driver import evaluate
    from ..results import EPISODES_FILE
    from .hidden.evaluator import policy_entry

    manifest = check(bundle, team=team)
    work = tempfile.mkdtemp(prefix="ember-bundle-check-")
    try:
        os.chmod(work, 0o755)  # the sandbox's uid reaches the unpacked bundle (isolation.md §2)
        agent = os.path.join(work, "agent")
        extract_bundle(bundle, agent)
        entry = policy_entry(manifest.name, manifest.as_dict(), agent)
        source = os.path.abspath(scenario) if os.path.exists(scenario) else scenario
        campaign = {"campaign": "bundle-check", "seeds": [seed], "scenarios": [source], "policies": [entry]}
        path = os.path.join(agent, CAMPAIGN_NAME)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(tomli_w.dumps(campaign))
        results = os.path.join(work, "results")
        evaluate(path, results, workers=1, sandbox=sandbox)
        with open(os.path.join(results, EPISODES_FILE), encoding="utf-8") as handle:
            row = json.loads(handle.readline())
        return LocalRun(manifest, scenario, seed, row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
