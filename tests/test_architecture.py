"""The architecture's rules that an import graph cannot show (docs/architecture.md).

The import contracts themselves are checked by ``lint-imports`` in CI
(pyproject.toml); these tests cover what it cannot see.
"""

import subprocess
import sys

# The optional extras (pyproject.toml): `import ember` and `ember metrics` never pay for them.
EXTRAS = (
    "distributed",
    "dask",
    "scipy",
    "threadpoolctl",
    "numpy",  # a core dependency: the exposure field of grids of 4,096 cells or more, and a campaign's workers
    "matplotlib",
    "gymnasium",
    "pettingzoo",
    "pedpy",
    "shapely",
    "PIL",
    "ortools",  # the bounds extra
    "tabulate",
    "tqdm",
    "zstandard",
    # the service extra (ember.service, ember submit)
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "httpx",
)


def _extras_loaded(code):
    probe = f"import sys\n{code}\nsys.stderr.write(repr(sorted(m for m in {EXTRAS!r} if m in sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"no output, exit {done.returncode}"


def test_import_ember_never_pays_for_an_optional_extra():
    assert _extras_loaded("import ember") == "[]"


def test_ember_metrics_never_pays_for_an_optional_extra(tmp_path):
    record = tmp_path / "run.record"
    made = f"from ember.cli import main\nraise SystemExit(main(['run', 'builtin:small-room', '-o', {str(record)!r}]))"
    subprocess.run([sys.executable, "-c", made], check=True, timeout=120)
    code = (
        "import contextlib, io\n"
        "from ember.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    status = main(['metrics', 'builtin:small-room', {str(record)!r}])\n"
        "assert status == 0 and '\"safety\"' in out.getvalue(), (status, out.getvalue()[:200])\n"
    )
    assert _extras_loaded(code) == "[]"


def test_the_bounds_load_or_tools_only_when_a_flow_is_computed():
    assert _extras_loaded("import ember.bounds, ember.campaign.bounds") == "['numpy']"
    assert "ortools" in _extras_loaded("import ember\nember.episode_bounds('builtin:small-room', 0)")


def test_the_extras_probe_sees_an_extra_that_is_loaded():
    assert _extras_loaded("import tabulate") == "['tabulate']"
