"""``ember submit`` (service.md §2): the client, over httpx.

It creates the submission (or finds it: a 409 names its id), asks its
status, uploads only the missing episodes (``jobs`` at once), and closes
it when complete unless told not to.  It refuses a plain ``http://`` URL
other than a loopback address, and a service of another major version.
"""

import concurrent.futures
import ipaddress
import os
import time

from ..errors import ServiceError
from ..results import CAMPAIGN_FILE, RECORDS_DIR

MAJOR = "1"
RETRIES = 5
#: How long an upload waits out 429 and 503 answers in all (the service's body_max_s default).
UPLOAD_WAIT_S = 3600
#: The longest ``Retry-After`` waited out; a longer one (a daily limit) ends the command at once.
MAX_WAIT_S = 30


class Outcome:
    """What a submission came to: its id and state, the keys uploaded now, those refused with the reasons."""

    def __init__(self, submission_id):
        self.id = submission_id
        self.state = "open"
        self.uploaded = 0
        self.refused = []  # (scenario_id, seed, message)
        self.missing = 0

    def line(self):
        refused = f", {len(self.refused)} refused" if self.refused else ""
        return f"submission {self.id} is {self.state}: {self.uploaded} uploaded now{refused}, {self.missing} missing."


def _loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url):
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ServiceError(f"URL {url!r}: {exc}") from None
    if parsed.scheme == "https":
        return parsed
    if parsed.scheme == "http" and _loopback(parsed.host):
        return parsed
    if parsed.scheme == "http":
        raise ServiceError(f"URL {url}: plain http:// is refused except to a loopback address; use https://")
    raise ServiceError(f"URL {url!r}: expected https://HOST (or http:// to a loopback address)")


def read_token(path):
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read().strip()
    except OSError as exc:
        raise ServiceError(f"{path}: cannot read the token file: {exc.strerror or exc}") from None
    if not token.startswith("ember_") or len(token.split()) != 1:
        raise ServiceError(f"{path}: expected one token (ember_...), as 'ember service team add' printed it")
    return token


def record_folder(source, policy):
    """The folder laid out like a ``records`` entry: SOURCE itself, or SOURCE/records/POLICY of a results directory."""
    if not os.path.isdir(source):
        raise ServiceError(f"{source}: expected a results directory or a folder of records")
    if os.path.exists(os.path.join(source, CAMPAIGN_FILE)):
        folder = os.path.join(source, RECORDS_DIR, policy)
        if not os.path.isdir(folder):
            raise ServiceError(f"{source}: no kept records of policy {policy} ({folder}; evaluate --keep-records)")
        return folder
    return source


def _message(response):
    try:
        value = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    return value.get("error", f"HTTP {response.status_code}") if isinstance(value, dict) else str(value)


def retry_after(response):
    """The seconds a 429 or 503 asks to wait (``Retry-After``, delta-seconds; 1 when absent or unreadable)."""
    text = response.headers.get("retry-after", "")
    return int(text) if text.isdigit() else 1


def _duration(seconds):
    hours, rest = divmod(seconds, 3600)
    minutes = -(-rest // 60)
    if minutes == 60:
        hours, minutes = hours + 1, 0
    return f"{hours} h {minutes} min" if hours else f"{max(minutes, 1)} min"


class Client:
    def __init__(self, url, token, transport=None):
        import httpx

        self.httpx = httpx
        self.http = httpx.Client(
            base_url=str(check_url(url)).rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(120.0, connect=10.0),
            transport=transport,
        )

    def call(self, method, path, **options):
        """The response, after waiting out 429 and 503 (``Retry-After``) a few times; network errors are bad input.

        A ``Retry-After`` longer than ``MAX_WAIT_S`` (a daily limit: the seconds to the next UTC day) is not
        waited out: the command ends at once, saying when to try again.
        """
        for attempt in range(RETRIES + 1):
            try:
                response = self.http.request(method, path, **options)
            except self.httpx.HTTPError as exc:
                raise ServiceError(f"{method} {path}: {exc}") from None
            if response.status_code not in (429, 503):
                return response
            wait = retry_after(response)
            if wait > MAX_WAIT_S:
                raise ServiceError(f"{_message(response)}: try again in {_duration(wait)}")
            if attempt == RETRIES or "content" in options:
                return response
            time.sleep(wait)
        return response

    def check_version(self):
        response = self.call("GET", "/api")
        version = response.json().get("service_version", "") if response.status_code == 200 else ""
        if version.split(".")[0] != MAJOR:
            raise ServiceError(f"the service speaks version {version or '(none)'}; this ember submit speaks {MAJOR}.x")

    def submission(self, board, policy, description=None, link=None):
        body = {"policy": policy}
        body.update({key: value for key, value in (("description", description), ("link", link)) if value is not None})
        response = self.call("POST", f"/api/boards/{board}/submissions", json=body)
        if response.status_code in (201, 409) and "id" in response.json():
            return response.json()["id"]
        raise ServiceError(f"board {board}: {_message(response)}")

    def status(self, submission_id):
        response = self.call("GET", f"/api/submissions/{submission_id}")
        if response.status_code != 200:
            raise ServiceError(f"submission {submission_id}: {_message(response)}")
        return response.json()

    def upload(self, submission_id, scenario_id, seed, path):
        """None when accepted (201, or 200 for the same record again), else the server's message."""
        url = f"/api/submissions/{submission_id}/episodes/{scenario_id}/{seed}"
        # A team's verifications are few (verifications_per_team): its other uploads end, so a 429 or 503 is
        # waited out for as long as a body may take, not a fixed number of times.
        deadline = time.monotonic() + UPLOAD_WAIT_S
        while True:
            with open(path, "rb") as handle:
                response = self.call("PUT", url, content=handle)
            if response.status_code in (200, 201):
                return None
            if response.status_code in (429, 503) and time.monotonic() < deadline:
                time.sleep(retry_after(response))
                continue
            return _message(response)

    def close(self, submission_id):
        return self.call("POST", f"/api/submissions/{submission_id}/close")


def submit(
    url, board, token, policy, source, jobs=4, close=True, progress=None, transport=None, description=None, link=None
):
    """Submit the records of ``source`` as ``policy`` to ``board``; returns an ``Outcome``.  ``description`` and
    ``link`` go with a new submission (a submission found again keeps its own)."""
    from ..campaign.episode import EpisodeFailure, submitted_file

    folder = record_folder(source, policy)
    client = Client(url, token, transport)
    client.check_version()
    outcome = Outcome(client.submission(board, policy, description, link))
    status = client.status(outcome.id)
    outcome.state = status["state"]
    missing = [tuple(key) for key in status["missing"]]
    if outcome.state != "open":
        outcome.missing = len(missing)
        return outcome
    work = []
    for scenario_id, seed in missing:
        try:
            work.append((scenario_id, seed, submitted_file({"records": "."}, scenario_id, seed, folder)))
        except EpisodeFailure as exc:
            outcome.refused.append((scenario_id, seed, f"not sent: {exc}"))
    with concurrent.futures.ThreadPoolExecutor(max(jobs, 1)) as pool:
        futures = {pool.submit(client.upload, outcome.id, *item): item for item in work}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            scenario_id, seed, _ = futures[future]
            message = future.result()
            if message is None:
                outcome.uploaded += 1
            else:
                outcome.refused.append((scenario_id, seed, message))
            if progress is not None:
                progress(done, len(work))
    outcome.refused.sort()
    outcome.missing = len(client.status(outcome.id)["missing"])
    if close and outcome.missing == 0:
        response = client.close(outcome.id)
        if response.status_code != 200:
            raise ServiceError(f"closing submission {outcome.id}: {_message(response)}")
        outcome.state = "closed"
    return outcome


def submit_agent(url, board, token, bundle, transport=None):
    """Send an agent bundle to ``board``'s hidden track; returns the job's id (service.md §3)."""
    if not os.path.isfile(bundle):
        raise ServiceError(f"{bundle}: expected a .tar.gz agent bundle (a file)")
    client = Client(url, token, transport)
    client.check_version()
    with open(bundle, "rb") as handle:
        response = client.call(
            "POST", f"/api/boards/{board}/agents", content=handle, headers={"Content-Type": "application/gzip"}
        )
    if response.status_code != 202:
        raise ServiceError(f"board {board}: the bundle is refused: {_message(response)}")
    return response.json()["id"]


def submission_status(url, token, submission_id, transport=None):
    """``GET /api/submissions/{id}`` as the team sees it (its own submission only)."""
    client = Client(url, token, transport)
    client.check_version()
    return client.status(submission_id)


def job_status(url, token, job_id, transport=None):
    """``GET /api/jobs/{id}`` as the team sees it (its own job only)."""
    client = Client(url, token, transport)
    client.check_version()
    response = client.call("GET", f"/api/jobs/{job_id}")
    if response.status_code != 200:
        raise ServiceError(f"job {job_id}: {_message(response)}")
    return response.json()
