"""A team's pages, ``/submissions/{id}`` and ``/jobs/{id}``, against a real uvicorn, read in headless Chromium.

The page is the same static text for every id and holds nothing of the team's; a token typed into its
password field stays in the tab's sessionStorage (never in a URL) and goes only to the API, in the
Authorization header; the API's words are text on the page, never markup (a refusal quoting a hostile
record, a bundle's stderr after the reveal); another team's token shows nothing.
"""

import gzip
import json
import os
import re

import httpx
import pytest

from helpers.browser import Tab
from helpers.bundles import python_bundle
from helpers.hidden import HiddenService
from helpers.service import Service, ember, record_of

HOSTILE = '<img src="data:," onerror="window.injected = 1"><script>window.injected = 2</script>'
#: Short enough for the engine's message to quote it whole.
MARKUP = "<img src=x onerror=window.injected=1>"


def hostile_record(results, policy, seed):
    """A record whose first person's id is markup: refused, and the engine's message quotes the id."""
    text = gzip.decompress(record_of(results, policy, seed)).decode("utf-8")
    first = re.search(r'"person_id":"(p\d+)"', text).group(0)
    return text.replace(first, f'"person_id":{json.dumps(MARKUP)}', 1).encode("utf-8")


@pytest.fixture(scope="module")
def submitted(tmp_path_factory, runs):
    """alpha's open submission: seed 0 accepted, seed 1 refused with a message quoting markup."""
    made = Service(str(tmp_path_factory.mktemp("team-pages")), teams=("alpha", "beta"))
    server = made.serve()
    results, policy = runs["alpha"]
    with made.client("alpha") as client:
        submission = client.post("/api/boards/office/submissions", json={"policy": policy}).json()["id"]
        put = client.put(
            f"/api/submissions/{submission}/episodes/office-floor/0", content=record_of(results, policy, 0)
        )
        assert put.status_code == 201, put.text
        bad = client.put(
            f"/api/submissions/{submission}/episodes/office-floor/1", content=hostile_record(results, policy, 1)
        )
        assert bad.status_code == 422 and MARKUP in bad.json()["error"], bad.text
    yield made, server, submission
    made.close()


def type_token(tab, token):
    """Type ``token`` into the page's password field (as keystrokes would) and press its button."""
    tab.wait_until("!document.getElementById('token-form').hidden", "the token form")
    tab.evaluate("document.getElementById('token').focus()")
    tab.browser.send("Input.insertText", {"text": token}, session=tab.session)
    tab.evaluate("document.querySelector('#token-form button').click()")


SUBMISSION = """
(function () {
  var root = document.documentElement;
  if (!root.getAttribute("data-shown")) { return null; }
  function cells(id) {
    var t = document.getElementById(id);
    return t ? Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }) : null;
  }
  var facts = {};
  document.querySelectorAll("dl.facts dt").forEach(function (dt) {
    facts[dt.textContent] = dt.nextSibling.textContent;
  });
  return {shown: root.getAttribute("data-shown"), facts: facts, rows: cells("rows"), refusals: cells("refusals"),
          missing: Array.prototype.map.call(document.querySelectorAll("ul.keys li"), function (li) {
            return li.textContent; }),
          injected: window.injected === undefined ? null : window.injected,
          images: document.querySelectorAll("img").length, scripts: document.querySelectorAll("script").length,
          stored: window.sessionStorage.getItem("ember-token"), address: window.location.href,
          formHidden: document.getElementById("token-form").hidden,
          width: document.documentElement.scrollWidth};
})()
"""


def test_the_submission_page_shows_the_submission_to_its_teams_token(submitted, browser):
    made, server, submission = submitted
    token = made.tokens["alpha"]
    api = httpx.get(f"{server.url}/api/submissions/{submission}", headers=made.headers("alpha"), timeout=30).json()
    tab = Tab(browser)
    tab.open(f"{server.url}/submissions/{submission}")
    type_token(tab, token)
    shown = tab.wait_until(SUBMISSION, "the submission on its page")
    # Reopened in the same tab: the token is still in sessionStorage, nothing is typed.
    tab.open(f"{server.url}/submissions/{submission}")
    again = tab.wait_until(SUBMISSION, "the submission after a reload")
    tab.evaluate("document.getElementById('forget').click()")
    forgotten = tab.evaluate(
        "[window.sessionStorage.getItem('ember-token'), document.getElementById('token-form').hidden,"
        " document.getElementById('shown').childNodes.length]"
    )
    check = tab.check(shown, b"", allowed=(server.url + "/",))
    tab.close()
    assert check.problems == []
    assert shown["shown"] == submission and again["shown"] == submission
    assert shown["facts"] == {
        "id": submission, "board": "office", "team": "alpha", "policy": api["policy"], "state": "open",
        "episodes": "1 of 2 accepted",
    }  # fmt: skip
    row = api["rows"][0]
    safety = row["metrics"]["safety"]
    # An open submission's record is not published yet: its sha256 is text, not a link.
    assert shown["rows"] == [
        ["office-floor", "0", "ok", str(safety["casualties"]), str(safety["stranded"]), str(safety["evacuated"]),
         row["record_sha256"]],
    ]  # fmt: skip
    assert shown["missing"] == ["office-floor seed 1"]
    # The refusal quotes the hostile record's markup: shown as the text it is, nothing of it runs.
    assert shown["refusals"] == [["office-floor", "1", api["refusals"][0]["error"]]]
    assert MARKUP in shown["refusals"][0][2]
    assert (shown["injected"], shown["images"], shown["scripts"]) == (None, 0, 1)
    # The token is in the tab's sessionStorage, in no address the page asked for or shows.
    assert shown["stored"] == token and shown["formHidden"] is True
    assert token not in shown["address"] and not any(token in url for url in check.requests)
    assert any(url == f"{server.url}/api/submissions/{submission}" for url in check.requests)
    assert shown["width"] <= 1280
    assert forgotten == [None, False, 0]


def test_another_teams_token_shows_nothing(submitted, browser):
    made, server, submission = submitted
    tab = Tab(browser)
    tab.open(f"{server.url}/submissions/{submission}")
    type_token(tab, made.tokens["beta"])
    message = tab.wait_until(
        "document.getElementById('message').className === 'warning' && document.getElementById('message').textContent",
        "the refusal on the page",
    )
    state = tab.evaluate(
        "[document.getElementById('shown').childNodes.length, window.sessionStorage.getItem('ember-token'),"
        " document.getElementById('token-form').hidden]"
    )
    tab.close()
    refused = httpx.get(f"{server.url}/api/submissions/{submission}", headers=made.headers("beta"), timeout=30)
    assert refused.status_code == 403 and message == refused.json()["error"]
    assert state == [0, None, False]  # nothing shown, the refused token forgotten, the form asks again


def test_the_page_is_one_static_text_for_every_id(submitted):
    made, server, submission = submitted
    other = "0f0e0d0c-0b0a-4908-8706-050403020100"
    first = httpx.get(f"{server.url}/submissions/{submission}", timeout=30)
    second = httpx.get(f"{server.url}/submissions/{other}", timeout=30)
    assert first.status_code == 200 and second.status_code == 200
    assert first.content == second.content
    assert submission.encode() not in first.content and made.tokens["alpha"].encode() not in first.content
    # The one script runs by its hash; it may ask only this service; nothing frames the page or learns its path.
    policy = first.headers["content-security-policy"]
    script = re.search(rb"<script>(.*?)</script>", first.content, re.DOTALL).group(1)
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert first.headers["referrer-policy"] == "no-referrer"
    assert first.headers["content-type"] == "text/html; charset=utf-8"
    for path in ("/submissions/not-an-id", f"/submissions/{submission.upper()}", "/jobs/..%2F..%2Fetc"):
        refused = httpx.get(server.url + path, timeout=30)
        assert refused.status_code == 404 and set(refused.json()) == {"error"}, path
    assert httpx.get(f"{server.url}/jobs/{other}", timeout=30).content != first.content


#: A python policy that prints markup on its stderr and raises with it: the team reads both after the reveal.
HOSTILE_POLICY = f"""
import sys


def make_policy(scenario):
    def policy(observation):
        print({HOSTILE!r}, file=sys.stderr, flush=True)
        raise RuntimeError({HOSTILE!r})

    return policy
"""

JOB = """
(function () {
  var root = document.documentElement;
  if (root.getAttribute("data-shown") !== "JOB") { return null; }
  function cells(id) {
    var t = document.getElementById(id);
    return t ? Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }) : null;
  }
  var tail = document.querySelector("pre.tail");
  return {state: document.querySelector("dl.facts dd:nth-of-type(2)").textContent,
          episodes: document.querySelector("dl.facts dd:nth-of-type(3)").textContent,
          scenarios: cells("scenarios"), failures: cells("failures"), tail: tail ? tail.textContent : null,
          injected: window.injected === undefined ? null : window.injected,
          images: document.querySelectorAll("img").length, scripts: document.querySelectorAll("script").length,
          width: document.documentElement.scrollWidth};
})()
"""


def test_the_job_page_shows_the_job_and_a_bundles_words_only_as_text(tmp_path, browser):
    hidden = HiddenService(hidden_seeds=2, teams=("alpha",))
    try:
        server = hidden.serve()
        bundle = python_bundle(os.path.join(hidden.root, "hostile.tar.gz"), policy=HOSTILE_POLICY)
        job = hidden.submit("alpha", bundle)
        before = hidden.wait_job("alpha", job)
        token = hidden.tokens["alpha"]
        tab = Tab(browser)
        tab.open(f"{server.url}/jobs/{job}")
        type_token(tab, token)
        secret = tab.wait_until(JOB.replace("JOB", job), "the job on its page")
        ember("service", "board", "reveal", hidden.data, "office")
        after = hidden.job("alpha", job).json()
        tab.open(f"{server.url}/jobs/{job}")
        revealed = tab.wait_until(JOB.replace("JOB", job), "the revealed job on its page")
        check = tab.check(revealed, b"", allowed=(server.url + "/",))
        tab.close()
    finally:
        hidden.close()
    assert check.problems == []
    # Before the reveal: the API's fixed reasons, no stderr.
    assert (secret["state"], secret["episodes"]) == (before["state"], f"{before['done']} of {before['total']} done")
    assert secret["failures"] == [[f["scenario_id"], f["error"]] for f in before["failures"]] and secret["tail"] is None
    assert {error for _, error in secret["failures"]} == {"raised"}
    assert secret["scenarios"] == [
        [s["scenario_id"], str(s["episodes"]), str(s["casualties"]), str(s["stranded"]), str(s["evacuated"])]
        for s in before["scenarios"]
    ]
    # After it: the bundle's own words, markup included, as text; nothing of them runs.
    assert revealed["failures"] == [[f["scenario_id"], f["error"]] for f in after["failures"]]
    assert all(HOSTILE in error for _, error in revealed["failures"])
    assert revealed["tail"] == "\n".join(after["stderr_tail"]) and HOSTILE in revealed["tail"]
    assert (revealed["injected"], revealed["images"], revealed["scripts"]) == (None, 0, 1)
    assert revealed["width"] <= 1280 and secret["width"] <= 1280
