"""Campaign tests' helpers: the ``ember`` command in a subprocess, campaign folders, rows, small campaigns."""

import io
import json
import os
import shutil
import subprocess
import sys
import time

import ember
from ember.canonical import canonical_json
from ember.record.writer import run_episode

from helpers.scenarios import make_scenario

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE_AGENT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "greedy_agent.py")
ROW_KEYS = {
    "scenario_id",
    "scenario_hash",
    "seed",
    "policy",
    "status",
    "error",
    "metrics",
    "steps",
    "record",
    "record_sha256",
    "elapsed_s",
}
SMALL = "builtin:small-room"


def ember_cli(*args, cwd=None, env=None, timeout=120):
    """The command in its own process.  A run whose environment carries a hook folder or a run tag
    evaluates with ``--sandbox off``: its policies signal through them, which only a policy outside the
    sandbox can (the sandbox is tested in tests/isolation)."""
    args = [str(arg) for arg in args]
    environment = os.environ if env is None else env
    signalled = "EMBER_TEST_HOOK_DIR" in environment or "EMBER_TEST_RUN" in environment
    if signalled and args and args[0] == "evaluate" and "--sandbox" not in args:
        args += ["--sandbox", "off"]
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *args],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )


def hook_env(hook_dir):
    return dict(os.environ, EMBER_TEST_HOOK_DIR=str(hook_dir))


TINY = make_scenario(
    3,
    5,
    people={"a": (1, 1), "b": (1, 3)},
    exits={"out": (0, 2)},
    ignitions=[(2, 0)],
    p="1/2",
    max_steps=20,
    scenario_id="tiny",
)


def write_campaign(folder, text, hooks=False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.json").write_text(json.dumps(TINY))
    path = folder / "campaign.toml"
    path.write_text(text)
    if hooks:
        shutil.copy(os.path.join(HERE, "campaign_hooks.py"), folder / "campaign_hooks.py")
    return path


def read_rows(results):
    data = (results / "episodes.jsonl").read_bytes()
    assert data == b"" or data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    rows = [json.loads(line) for line in lines]
    for line, row in zip(lines, rows):
        assert line == canonical_json(row), "rows are canonical JSON"
        assert set(row) == ROW_KEYS
    return rows


def by_key(rows):
    keyed = {}
    for row in rows:
        key = (row["policy"], row["scenario_hash"], row["seed"])
        assert key not in keyed, f"two rows for {key}"
        keyed[key] = row
    return keyed


def without_timing(rows):
    return sorted(
        (dict(row, elapsed_s=None) for row in rows), key=lambda r: (r["policy"], r["scenario_hash"], r["seed"])
    )


def builtin_metrics(scenario, policy, seed, tmp_path):
    path = tmp_path / f"ref-{policy}-{seed}.record"
    run_episode(ember.load_scenario(scenario), policy, seed, str(path))
    return ember.episode_metrics(scenario, str(path)).to_dict(), path.read_bytes()


def wait_for(condition, timeout=90, what="a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def assert_one_line_error(done):
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


def snapshot(folder):
    """Every file under ``folder`` with its bytes (to prove nothing was written)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


BASIC = """
campaign = "basic"
seeds = [0, 1]
scenarios = ["builtin:small-room", { source = "tiny.json", seeds = [4] }]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "rnd"
builtin = "random"
"""


GOOD_POLICY = '[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
HEAD = 'campaign = "bad"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'


def in_process(main, argv):
    """Run ``main(argv)`` in this process: (exit status, stdout, stderr)."""
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def expected_code(folder, *paths):
    """campaign.json's ``code`` of a policy binding ``paths`` (relative to ``folder``), computed here on its own:
    the SHA-256 of the JSON of the sorted [path, sha256] pairs of every regular file, ``__pycache__`` left out."""
    import hashlib

    pairs = []
    for path in paths:
        full = os.path.join(folder, path)
        found = [full] if os.path.isfile(full) else []
        for parent, folders, files in os.walk(full):
            folders[:] = [name for name in folders if name != "__pycache__"]
            found += [os.path.join(parent, name) for name in files if not os.path.islink(os.path.join(parent, name))]
        for name in found:
            with open(name, "rb") as handle:
                pairs.append(
                    [os.path.relpath(name, folder).replace(os.sep, "/"), hashlib.sha256(handle.read()).hexdigest()]
                )
    text = json.dumps(sorted(pairs), separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
