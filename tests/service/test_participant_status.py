"""A participant sees every submission and job of the team's without curl: ``ember submit --status ID`` and
``ember jobs URL ID``, as tables or JSON, the team's own only, the hidden job told as the API tells it."""

import json

import httpx

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService
from helpers.service import Service, ember


def test_submit_status_shows_the_teams_submission_as_the_api_does(tmp_path, runs):
    service = Service(str(tmp_path))
    try:
        server = service.serve()
        results, policy = runs["alpha"]
        token = service.token_file("alpha")
        done = ember("submit", server.url, "office", "--token-file", token, "--policy", policy, results)
        submission = done.stdout.split()[3]
        shown = ember("submit", server.url, "office", "--token-file", token, "--status", submission, "--format", "json")
        api = httpx.get(f"{server.url}/api/submissions/{submission}", headers=service.headers("alpha")).json()
        assert json.loads(shown.stdout) == api
        table = ember("submit", server.url, "office", "--token-file", token, "--status", submission).stdout
        lines = table.splitlines()
        assert lines[0].split() == ["field", "value"]
        assert any(line.split() == ["state", "closed"] for line in lines)
        assert "done: 2 (office-floor seed 0, office-floor seed 1)" in table and "missing: 0" in table
        other = ember(
            "submit", server.url, "office", "--token-file", service.token_file("beta"), "--status", submission,
            check=False,
        )  # fmt: skip
        assert other.returncode == 2 and other.stdout == "" and "another team" in other.stderr
        mixed = ember(
            "submit", server.url, "office", "--token-file", token, "--status", submission, "--policy", "x", check=False
        )
        assert mixed.returncode == 2 and "takes no --policy" in mixed.stderr
    finally:
        service.close()


def test_jobs_shows_the_teams_job_as_the_api_does(tmp_path):
    hidden = HiddenService(hidden_seeds=2, teams=("alpha", "beta"))
    try:
        hidden.serve()
        job = hidden.submit("alpha", python_bundle(tmp_path / "walker.tar.gz"))
        api = hidden.wait_job("alpha", job)
        token = hidden.token_file("alpha")
        shown = ember("jobs", hidden.server.url, "--token-file", token, job, "--format", "json")
        assert json.loads(shown.stdout) == api
        table = ember("jobs", hidden.server.url, "--token-file", token, job).stdout
        assert any(line.split() == ["state", "done"] for line in table.splitlines())
        assert "scenarios\n" in table and "office-floor" in table
        other = ember("jobs", hidden.server.url, "--token-file", hidden.token_file("beta"), job, check=False)
        assert other.returncode == 2 and other.stdout == "" and len(other.stderr.splitlines()) == 1
    finally:
        hidden.close()
