"""Fixtures of the service tests: one PostgreSQL cluster per session, the backend parameter, team runs, a browser."""

import pytest

from helpers.browser import CHROMIUM, DevTools
from helpers.service import PostgresCluster, Service, team_results

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres():
    cluster = PostgresCluster()
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium, for the board pages."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    started = DevTools(CHROMIUM, str(tmp_path_factory.mktemp("chromium-profile")))
    yield started
    started.close()


@pytest.fixture(params=BACKENDS)
def database(request):
    """None (SQLite in DATA, the default) or the URL of a new PostgreSQL database."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("postgres").database()


@pytest.fixture
def service(tmp_path, database):
    made = Service(str(tmp_path), database)
    yield made
    made.close()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Three teams' own --keep-records campaigns on builtin:office, seeds 0 and 1: {team: (results, policy)}."""
    base = str(tmp_path_factory.mktemp("team-runs"))
    chosen = {"alpha": "greedy", "beta": "stay", "gamma": "random"}
    return {team: (team_results(base, team, policy), policy) for team, policy in chosen.items()}
