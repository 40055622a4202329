"""Headless Chromium over the DevTools protocol (a pipe, no websocket), for tests of pages in a real browser.

``DevTools`` starts Debian's chromium with ``--remote-debugging-pipe``; a
``Tab`` opens a page, evaluates scripts in it and waits on its DOM;
``load_page`` opens, runs one script and screenshots; ``PageCheck`` lists
console errors, uncaught exceptions, failed loads and requests outside
the allowed URLs.
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

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    # Any host name but the loopback fails to resolve at once: the page cannot reach the network, and a
    # test page that tries fails fast instead of waiting for a timeout.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
)  # fmt: skip
WIDTH = 1280
#: A hang is stopped after this long; it never decides a pass.
HANG_LIMIT_S = 90


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

    def _receive(self, until):
        while b"\0" not in self._buffer:
            left = until - time.monotonic()
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
        # Each command's own limit, not the browser's lifetime: a browser shared by a module's tests lives longer.
        deadline = time.monotonic() + HANG_LIMIT_S
        while True:
            reply = self._receive(deadline)
            if reply is None:
                raise TimeoutError(f"no reply to {method}")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method, session, after=0):
        """Wait for a ``method`` event of ``session`` among the events from index ``after`` on."""
        deadline = time.monotonic() + HANG_LIMIT_S
        while True:
            if any(e.get("method") == method and e.get("sessionId") == session for e in self.events[after:]):
                return
            event = self._receive(deadline)
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

    def __init__(self, events, script_result, png, allowed=("file:", "data:")):
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
                if not url.startswith(tuple(allowed)):
                    self.problems.append(f"request outside the page: {url}")
            elif method == "Network.loadingFailed":
                self.problems.append(f"load failed: {params.get('errorText')}")
        self.script_result = script_result
        self.png = png


class Tab:
    """One tab of ``browser`` attached over the DevTools protocol (Runtime, Log, Page and Network events on)."""

    def __init__(self, browser):
        self.browser = browser
        self.target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            browser.send(f"{domain}.enable", session=self.session)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )

    def open(self, url):
        # The load event of this navigation: a tab opened before has an earlier page's among its events.
        start = len(self.browser.events)
        self.browser.send("Page.navigate", {"url": url}, session=self.session)
        self.browser.wait_for("Page.loadEventFired", self.session, after=start)

    def evaluate(self, script):
        result = self.browser.send(
            "Runtime.evaluate", {"expression": script, "returnByValue": True}, session=self.session
        )
        return result.get("result", {}).get("value")

    def wait_until(self, script, what):
        """Evaluate ``script`` until it gives a true value (the page's own timers drive it); that value.

        Only a hang (HANG_LIMIT_S) stops the waiting: how long it took is never a verdict."""
        deadline = time.monotonic() + HANG_LIMIT_S
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(script)
            except RuntimeError:
                value = None  # the page is being replaced (a reload): ask again
            if value:
                return value
            self.browser.drain(0.2)
        raise TimeoutError(f"{what}: not seen within {HANG_LIMIT_S} s")

    def screenshot(self):
        height = self.browser.send("Page.getLayoutMetrics", session=self.session)["cssContentSize"]["height"]
        shot = self.browser.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": WIDTH, "height": min(height, 16000), "scale": 1},
            },
            session=self.session,
        )
        return base64.b64decode(shot["data"])

    def check(self, script_result, png, allowed=("file:", "data:")):
        """What the tab showed so far as a ``PageCheck``."""
        events = [e for e in self.browser.events if e.get("sessionId") == self.session]
        return PageCheck(events, script_result, png, allowed)

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})


def load_page(browser, path, script="null", allowed=("file:", "data:")):
    """Open ``path`` (a file, or a URL) in a new tab of ``browser``, run ``script`` after load, take a full-page
    screenshot; requests to URLs not starting with one of ``allowed`` are problems."""
    tab = Tab(browser)
    url = path if str(path).startswith(("http:", "https:")) else "file://" + os.path.abspath(path)
    tab.open(url)
    value = tab.evaluate(script)
    browser.drain(0.5)
    png = tab.screenshot()
    tab.close()
    return tab.check(value, png, allowed)


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
