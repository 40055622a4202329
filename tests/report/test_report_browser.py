"""The report in a real browser: headless Chromium over the DevTools protocol (a pipe, no websocket).

The page must load with no console error, no uncaught exception, no failed
load and no request beyond ``file:``/``data:`` URLs, its script must run
(the sortable leaderboard), and its screenshot must not be blank.  The
checker itself is tested on pages that break each rule.
"""

import base64
import contextlib
import fcntl
import io
import json
import os
import select
import shutil
import subprocess
import sys
import time

import pytest

from ember.report import build_report

from helpers.ranking_results import builtin_results, failed_row

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    # Any host name fails to resolve at once: the page cannot reach the network, and a test
    # page that tries fails fast instead of waiting for a timeout.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
)  # fmt: skip
WIDTH = 1280
#: A hang is stopped after this long; it never decides a pass.
HANG_LIMIT_S = 90


@pytest.fixture(scope="module")
def chromium_path():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    return CHROMIUM


_ONTO_3_AND_4 = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
)


class DevTools:
    """Chromium started with ``--remote-debugging-pipe``: commands on fd 3, replies and events on fd 4."""

    def __init__(self, executable, profile):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Chromium reads commands from fd 3 and writes to fd 4.  A small Python trampoline puts the
        # pipe ends there and execs it; copies at 10 and above cannot collide with 3 or 4 meanwhile.
        reading = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        writing = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        log = os.open(os.path.join(profile, "chromium.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _ONTO_3_AND_4,
                    str(reading),
                    str(writing),
                    executable,
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(reading, writing),
            )
        finally:
            for fd in (to_browser_r, from_browser_w, reading, writing, log):
                os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        self._deadline = time.monotonic() + HANG_LIMIT_S

    def _receive(self, until):
        while b"\0" not in self._buffer:
            left = min(until, self._deadline) - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe (see chromium.log in the profile)")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data) :]
        while True:
            reply = self._receive(self._deadline)
            if reply is None:
                raise TimeoutError(f"no reply to {method}")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method, session):
        while True:
            if any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
                return
            event = self._receive(self._deadline)
            if event is None:
                raise TimeoutError(f"no {method} event")
            self.events.append(event)

    def drain(self, seconds):
        """Collect events for a short while (late errors from timers)."""
        until = time.monotonic() + seconds
        while (event := self._receive(until)) is not None:
            self.events.append(event)

    def close(self):
        try:
            if self.process.poll() is None:
                with contextlib.suppress(OSError, RuntimeError, TimeoutError):
                    self.send("Browser.close")
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)


class PageCheck:
    """What loading one page showed: problems (console errors, exceptions, failed or outside requests)."""

    def __init__(self, events, script_result, png):
        self.problems = []
        self.requests = []
        for event in events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                self.problems.append(f"uncaught exception: {text}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                self.problems.append(f"console.{params['type']}: {args}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                self.problems.append(f"log error: {params['entry'].get('text')} {params['entry'].get('url', '')}")
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                self.requests.append(url)
                if not url.startswith(("file:", "data:")):
                    self.problems.append(f"request outside the page: {url}")
            elif method == "Network.loadingFailed":
                self.problems.append(f"load failed: {params.get('errorText')}")
        self.script_result = script_result
        self.png = png


def load_page(browser, path, script="null"):
    """Open ``path`` in a new tab of ``browser``, run ``script`` after load, take a full-page screenshot."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        browser.send(f"{domain}.enable", session=session)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=session)
    browser.wait_for("Page.loadEventFired", session)
    result = browser.send("Runtime.evaluate", {"expression": script, "returnByValue": True}, session=session)
    browser.drain(0.5)
    height = browser.send("Page.getLayoutMetrics", session=session)["cssContentSize"]["height"]
    shot = browser.send(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": min(height, 16000), "scale": 1},
        },
        session=session,
    )
    browser.send("Target.closeTarget", {"targetId": target})
    events = [e for e in browser.events if e.get("sessionId") == session]
    value = result.get("result", {}).get("value")
    return PageCheck(events, value, base64.b64decode(shot["data"]))


@pytest.fixture(scope="module")
def browser(chromium_path, tmp_path_factory):
    started = DevTools(chromium_path, str(tmp_path_factory.mktemp("chromium-profile")))
    yield started
    started.close()


def picture_stats(png):
    """(distinct colours, share of pixels unlike the most common colour) of a PNG."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=image.width * image.height)
    background = max(colours)[0]
    return len(colours), 1 - background / (image.width * image.height)


def assert_not_blank(png):
    colours, drawn = picture_stats(png)
    assert colours >= 50 and drawn >= 0.05, f"blank-looking screenshot: {colours} colours, {drawn:.1%} drawn"


# --- the checker catches what it must ------------------------------------------------------------


BROKEN_PAGES = {
    "uncaught exception": ("<p>x</p><script>window.undefinedFunction();</script>", "uncaught exception"),
    "console.error": ("<p>x</p><script>console.error('deliberate');</script>", "console.error: deliberate"),
    "error in a timer": ("<p>x</p><script>setTimeout(function () { null.x; }, 10);</script>", "uncaught exception"),
    "network request": ('<p>x</p><img src="https://example.com/pixel.png">', "request outside the page"),
    "missing file": ('<p>x</p><script src="no-such-file.js"></script>', "log error"),
}


def test_checker_catches_broken_pages(browser, tmp_path):
    """Each deliberate fault is reported (so a clean report means something)."""
    for i, (name, (body, expected)) in enumerate(sorted(BROKEN_PAGES.items())):
        page = tmp_path / f"broken{i}.html"
        page.write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
            f"</head><body>{body}</body></html>"
        )
        check = load_page(browser, page)
        assert any(expected in problem for problem in check.problems), (name, check.problems)


def test_blank_screenshot_is_caught(browser, tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body></body></html>")
    check = load_page(browser, page)
    assert check.problems == []
    with pytest.raises(AssertionError, match="blank-looking"):
        assert_not_blank(check.png)


# --- the report --------------------------------------------------------------------------------


SORT_BY_CASUALTIES_DESCENDING = """
(function () {
  var table = document.querySelector("#leaderboard table.sortable");
  var header = Array.prototype.find.call(table.tHead.rows[0].cells, function (th) {
    return th.textContent.trim() === "casualties"; });
  header.click(); header.click();
  var policy = Array.prototype.findIndex.call(table.tHead.rows[0].cells, function (th) {
    return th.textContent.trim() === "policy"; });
  var names = Array.prototype.map.call(table.tBodies[0].rows, function (r) {
    return r.cells[policy].textContent.trim(); });
  return {ready: document.documentElement.getAttribute("data-ready"), order: names,
          svgs: document.querySelectorAll("figure svg").length};
})()
"""


def test_report_renders_cleanly_in_chromium(browser, tmp_path):
    results = builtin_results(
        tmp_path / "results", scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0, 1)))
    )
    results.append(failed_row("greedy-agent", "small-room", results.campaign["scenarios"][0]["scenario_hash"], 0))
    results.campaign["policies"].append({"name": "greedy-agent", "agent": "python3 agent.py", "step_timeout": 10.0})
    results.write_campaign()
    page, warnings = build_report(results.campaign, results.episodes())
    assert warnings == []
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, SORT_BY_CASUALTIES_DESCENDING)
    assert check.problems == []
    assert all(url.startswith("file:") for url in check.requests) and len(check.requests) == 1
    # The script ran: the table sorted by casualties, most first.
    assert check.script_result == {"ready": "1", "order": ["stay", "random", "greedy"], "svgs": 4}
    assert_not_blank(check.png)
    shot = tmp_path / "report.png"
    shot.write_bytes(check.png)
    if os.environ.get("EMBER_REPORT_SCREENSHOT"):  # keep a copy to look at
        shutil.copyfile(shot, os.environ["EMBER_REPORT_SCREENSHOT"])


STATISTICS_ON_SCREEN = """
(function () {
  function shown(element) {
    var box = element.getBoundingClientRect();
    var style = getComputedStyle(element);
    return box.width > 0 && box.height > 0 && style.visibility !== "hidden" && style.display !== "none";
  }
  var table = document.querySelector("#leaderboard table.sortable");
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) { return th.textContent.trim(); });
  var rows = Array.prototype.map.call(table.tBodies[0].rows, function (r) {
    var cell = function (name) { return r.cells[heads.indexOf(name)]; };
    var bars = Array.prototype.map.call(r.querySelectorAll(".ci-bar"), function (bar) {
      var outer = bar.getBoundingClientRect(), range = bar.querySelector(".ci-range").getBoundingClientRect();
      var tick = bar.querySelector(".ci-point").getBoundingClientRect();
      return {shown: shown(bar), inside: range.left >= outer.left - 0.5 && range.right <= outer.right + 0.5,
              tickInRange: tick.left + tick.width / 2 >= range.left - 1.5 &&
                           tick.left + tick.width / 2 <= range.right + 1.5};
    });
    return {rank: cell("rank").textContent.trim(), interval: cell("rank 95%").textContent.trim(),
            group: cell("group").textContent.trim(), groupShown: shown(cell("group").querySelector(".group")),
            policy: cell("policy").textContent.trim(), bars: bars};
  });
  var warnings = Array.prototype.map.call(document.querySelectorAll("#leaderboard .warning"), function (w) {
    return {text: w.textContent.trim(), shown: shown(w), single: w.classList.contains("single")};
  });
  var sentences = Array.prototype.map.call(document.querySelectorAll("#statistics ul.sentences li"), function (li) {
    return {text: li.textContent.trim(), shown: shown(li)};
  });
  var pairRows = document.querySelectorAll("#statistics table")[0].tBodies[0].rows;
  var pairs = Array.prototype.map.call(pairRows, function (r) {
    return Array.prototype.map.call(r.cells, function (c) { return c.textContent.trim(); });
  });
  return {rows: rows, warnings: warnings, sentences: sentences, pairs: pairs,
          warningAboveBoard: warnings.length > 0 &&
            document.querySelector("#leaderboard .warning").getBoundingClientRect().bottom
              <= table.getBoundingClientRect().top};
})()
"""


def test_statistics_show_in_chromium(browser, tmp_path):
    """Rank intervals and groups beside the ranks, interval bars on the totals, the pairs with their sentences
    and p-values, the public-seeds note and the few-seed warnings (the single-seed one plainest) are on the
    rendered page."""
    from ember.stats import compute_statistics
    from ember.stats.text import p_value_text, pair_sentence

    results = builtin_results(
        tmp_path / "results", scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0,)))
    )
    page, _ = build_report(results.campaign, results.episodes(), 1000, 3)
    statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 3)
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, STATISTICS_ON_SCREEN)
    assert check.problems == []
    shown = check.script_result
    assert [row["policy"] for row in shown["rows"]] == [p["policy"] for p in statistics["policies"]]
    for row, entry in zip(shown["rows"], statistics["policies"]):
        low, high = entry["rank_interval"]
        assert row["rank"] == str(entry["rank"]) and row["group"] == str(entry["group"]) and row["groupShown"]
        assert row["interval"] == (str(low) if low == high else f"{low}–{high}")
        assert len(row["bars"]) == 4  # casualties, stranded, evacuated, person-time
        assert all(bar["shown"] and bar["inside"] and bar["tickInRange"] for bar in row["bars"]), row["bars"]
    warnings = shown["warnings"]
    # First the public seeds (isolation.md §4), then the few-seed warnings, the single-seed one plainest.
    assert [w["single"] for w in warnings] == [False, True, False] and all(w["shown"] for w in warnings)
    assert warnings[0]["text"].startswith("public seeds: a policy could have learned its seed from the fire. ")
    assert warnings[1]["text"].startswith("One seed only: 1 scenario has a single seed (bottleneck)")
    assert shown["warningAboveBoard"]
    expected = [pair_sentence(p, 1000) for p in statistics["pairs"]]
    assert [s["text"] for s in shown["sentences"]] == expected and all(s["shown"] for s in shown["sentences"])
    assert "is above" in expected[0] and "of 1,000 resamples" in expected[0]
    assert [row[-1] for row in shown["pairs"]] == [p_value_text(p["sign_test"]["p_value"]) for p in statistics["pairs"]]
    assert_not_blank(check.png)
