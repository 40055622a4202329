"""A daily limit's 429 says when it resets (``Retry-After`` = the real seconds to the next UTC day), and
``ember submit`` says so and ends at once instead of waiting in silence."""

import datetime
import os

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService
from helpers.service import Service, ember


def seconds_to_midnight():
    moment = datetime.datetime.now(datetime.timezone.utc)
    midnight = (moment + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - moment).total_seconds()


def test_the_daily_submission_limit_says_when_it_resets_and_submit_ends_at_once(tmp_path, runs):
    service = Service(str(tmp_path), None, {"submissions_per_day": 1})
    try:
        server = service.serve()
        results, policy = runs["alpha"]
        token = service.token_file("alpha")
        ember("submit", server.url, "office", "--token-file", token, "--policy", policy, results)
        with service.client("alpha") as alpha:
            low = seconds_to_midnight()
            refused = alpha.post("/api/boards/office/submissions", json={"policy": "again"})
            high = seconds_to_midnight()
        assert refused.status_code == 429 and "resets at 00:00 UTC" in refused.json()["error"]
        assert high - 1 <= int(refused.headers["retry-after"]) <= low + 1
        folder = os.path.join(results, "records", policy)  # the same records, as a folder, under another name
        done = ember("submit", server.url, "office", "--token-file", token, "--policy", "again", folder, check=False)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
        assert "made 1 submissions to this board today" in done.stderr and "try again in " in done.stderr
    finally:
        service.close()


def test_the_daily_bundle_limit_says_when_it_resets(tmp_path):
    hidden = HiddenService(hidden_seeds=1, teams=("alpha",), limits={"jobs_per_day": 1})
    try:
        hidden.serve()
        first = hidden.submit("alpha", python_bundle(tmp_path / "a.tar.gz"))
        hidden.wait_job("alpha", first)
        done = ember(
            "submit", hidden.server.url, "office", "--token-file", hidden.token_file("alpha"), "--agent",
            python_bundle(tmp_path / "b.tar.gz"), check=False,
        )  # fmt: skip
        assert done.returncode == 2 and done.stdout == "" and "sent 1 bundles to this board today" in done.stderr
        assert "resets at 00:00 UTC" in done.stderr and "try again in " in done.stderr
    finally:
        hidden.close()
