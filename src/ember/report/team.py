"""A team's own pages of the EMBER service: one submission (``/submissions/{id}``), one hidden-track job
(``/jobs/{id}``), in the look of ``ember report``.

Each page is the same static HTML for every id: no token, id or answer is in it.  Its script reads the id
from the page's own address, asks for the team's token (a password field, kept only in the tab's
``sessionStorage``), and shows the API's answer (``GET /api/submissions/{id}``, ``GET /api/jobs/{id}``,
with ``Authorization: Bearer``).  Every text of the answer reaches the page as ``textContent``, never as
markup, and only an http or https ``link`` becomes a link.
"""

from ..versions import RANKING_VERSION
from .board import POLL_MS
from .page import document, escape, section

#: The sessionStorage key of the token: one per tab, shared by the team's pages of this service.
TOKEN_KEY = "ember-token"

#: The pages: (kind, the API path its answer comes from, the page's title and what it shows).
KINDS = {
    "submission": ("/api/submissions/", "Submission", "state, episodes done and missing, rows and refusals"),
    "job": ("/api/jobs/", "Hidden-track job", "state, episodes done of the total, per-scenario totals, failures"),
}

_TEAM_CSS = """
[hidden] { display:none !important; }
form.token { display:flex; gap:10px; align-items:center; flex-wrap:wrap; margin:6px 0 0; }
form.token input { font:inherit; padding:4px 8px; min-width:24em; }
form.token button, button.forget { font:inherit; font-size:13px; padding:3px 12px; cursor:pointer; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; margin:4px 0 12px; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; overflow-wrap:anywhere; }
ul.keys { columns:4 12em; margin:6px 0; font-size:13px; }
pre.tail { background:var(--head); padding:10px 12px; border-radius:6px; overflow-x:auto; font-size:12px; }
td.error { white-space:normal; text-align:left; overflow-wrap:anywhere; }
#message:empty { display:none; }
"""

# The page's script: the token, the one request, the answer drawn with textContent.  The same for both
# pages; what differs is drawn by draw.submission and draw.job.
_SCRIPT = """
(function () {
  "use strict";
  var root = document.documentElement;
  var kind = root.getAttribute("data-kind");
  var api = root.getAttribute("data-api");
  var every = Number(root.getAttribute("data-poll-ms"));
  var KEY = "TOKEN_KEY";
  var parts = window.location.pathname.split("/");
  var id = decodeURIComponent(parts[parts.length - 1]);
  var form = document.getElementById("token-form");
  var input = document.getElementById("token");
  var forgetButton = document.getElementById("forget");
  var message = document.getElementById("message");
  var shown = document.getElementById("shown");
  var timer = null;

  function stored() { try { return window.sessionStorage.getItem(KEY); } catch (e) { return null; } }
  function keep(value) { try { window.sessionStorage.setItem(KEY, value); } catch (e) { /* private mode */ } }
  function forget() { try { window.sessionStorage.removeItem(KEY); } catch (e) { /* private mode */ } }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function say(text, cls) { message.textContent = text || ""; message.className = cls || "note"; }
  function httpLink(value) {
    if (typeof value !== "string") { return null; }
    try {
      var url = new URL(value);
      return (url.protocol === "http:" || url.protocol === "https:") && url.hostname ? url.href : null;
    } catch (e) { return null; }
  }
  function facts(pairs) {
    var dl = el("dl", null, "facts");
    pairs.forEach(function (pair) {
      if (pair[1] === undefined || pair[1] === null) { return; }
      dl.appendChild(el("dt", pair[0]));
      var dd = el("dd");
      if (pair[1] instanceof Node) { dd.appendChild(pair[1]); } else { dd.textContent = String(pair[1]); }
      dl.appendChild(dd);
    });
    return dl;
  }
  function table(id, headers, rows, text) {
    var wrap = el("div", null, "table-wrap");
    var t = el("table");
    t.id = id;
    var head = t.createTHead().insertRow();
    headers.forEach(function (h, i) {
      var th = el("th", h);
      if (text.indexOf(i) >= 0) { th.className = "text"; }
      head.appendChild(th);
    });
    var body = t.createTBody();
    rows.forEach(function (cells) {
      var tr = body.insertRow();
      cells.forEach(function (value, i) {
        var td = tr.insertCell();
        if (value instanceof Node) { td.appendChild(value); }
        else { td.textContent = value === null || value === undefined ? "" : String(value); }
        if (text.indexOf(i) >= 0) { td.className = "text"; }
      });
    });
    wrap.appendChild(t);
    return wrap;
  }
  function bar(done, total) {
    var outer = el("div", null, "bar");
    outer.title = done + " of " + total;
    var inner = el("span", null, "done");
    inner.style.width = (total ? 100 * done / total : 0).toFixed(2) + "%";
    outer.appendChild(inner);
    return outer;
  }
  function heading(text) { return el("h3", text); }
  function link(href, text, rel) {
    var a = el("a", text);
    a.href = href;
    if (rel) { a.rel = rel; }
    return a;
  }
  var LIMIT = 200;
  function keyList(keys) {
    var ul = el("ul", null, "keys");
    keys.slice(0, LIMIT).forEach(function (key) { ul.appendChild(el("li", key[0] + " seed " + key[1])); });
    var frag = document.createDocumentFragment();
    frag.appendChild(ul);
    if (keys.length > LIMIT) { frag.appendChild(el("p", "… and " + (keys.length - LIMIT) + " more.", "note")); }
    return frag;
  }

  var draw = {
    submission: function (s) {
      var frag = document.createDocumentFragment();
      var total = s.done.length + s.missing.length;
      var board = link("/boards/" + encodeURIComponent(s.board), s.board);
      var site = httpLink(s.link);
      frag.appendChild(facts([
        ["id", s.id], ["board", board], ["team", s.team], ["policy", s.policy], ["state", s.state],
        ["description", s.description], ["link", site ? link(site, site, "nofollow noopener") : null],
        ["episodes", s.done.length + " of " + total + " accepted"]
      ]));
      frag.appendChild(bar(s.done.length, total));
      frag.appendChild(heading("Missing episodes (" + s.missing.length + ")"));
      frag.appendChild(s.missing.length ? keyList(s.missing)
        : el("p", "None: every episode has an accepted record.", "note"));
      frag.appendChild(heading("Refusals (" + s.refusals.length + ")"));
      frag.appendChild(s.refusals.length ? table("refusals", ["scenario", "seed", "error"],
        s.refusals.map(function (r) { return [r.scenario_id, r.seed, r.error]; }), [0, 2])
        : el("p", "No refused upload.", "note"));
      var published = s.state === "closed";
      frag.appendChild(heading("Rows (" + s.rows.length + ")"));
      frag.appendChild(table("rows", ["scenario", "seed", "status", "casualties", "stranded", "evacuated", "record"],
        s.rows.map(function (r) {
          var safety = r.metrics && r.metrics.safety ? r.metrics.safety : {};
          var sha = r.record_sha256;
          var record = sha && published ? link("/api/records/" + encodeURIComponent(sha), sha) : sha;
          return [r.scenario_id, r.seed, r.status, safety.casualties, safety.stranded, safety.evacuated, record];
        }), [0, 2, 6]));
      return frag;
    },
    job: function (j) {
      var frag = document.createDocumentFragment();
      frag.appendChild(facts([["id", j.id], ["state", j.state], ["episodes", j.done + " of " + j.total + " done"]]));
      frag.appendChild(bar(j.done, j.total));
      frag.appendChild(heading("Per scenario"));
      frag.appendChild(table("scenarios", ["scenario", "episodes", "casualties", "stranded", "evacuated"],
        j.scenarios.map(function (s) { return [s.scenario_id, s.episodes, s.casualties, s.stranded, s.evacuated]; }),
        [0]));
      frag.appendChild(heading("Failures (" + j.failures.length + ")"));
      frag.appendChild(j.failures.length ? table("failures", ["scenario", "error"], j.failures.map(function (f) {
        return [f.scenario_id === null ? "(the whole job)" : f.scenario_id, f.error]; }), [0, 1])
        : el("p", "No failure.", "note"));
      if (Array.isArray(j.stderr_tail)) {
        frag.appendChild(heading("Standard error (the last lines)"));
        frag.appendChild(el("pre", j.stderr_tail.join("\\n"), "tail"));
      }
      return frag;
    }
  };
  var going = {
    submission: function (s) { return s.state === "open"; },
    job: function (j) { return j.state === "queued" || j.state === "running"; }
  };

  function ask() {
    form.hidden = false;
    forgetButton.hidden = true;
    shown.replaceChildren();
    input.focus();
  }
  function load() {
    window.clearTimeout(timer);
    var token = stored();
    if (!token) { ask(); say("Type your team's token to see this " + kind + "."); return; }
    fetch(api + encodeURIComponent(id), {headers: {Authorization: "Bearer " + token}, cache: "no-store",
                                         credentials: "omit"})
      .then(function (answer) {
        return answer.json().catch(function () { return {}; }).then(function (body) {
          return {status: answer.status, body: body};
        });
      })
      .then(function (got) {
        var error = typeof got.body.error === "string" ? got.body.error : "the service answered " + got.status;
        if (got.status === 401 || got.status === 403) { forget(); ask(); say(error, "warning"); return; }
        if (got.status !== 200) { shown.replaceChildren(); say(error, "warning"); return; }
        form.hidden = true;
        forgetButton.hidden = false;
        say("");
        shown.replaceChildren(draw[kind](got.body));
        root.setAttribute("data-shown", got.body.id);
        if (going[kind](got.body)) { timer = window.setTimeout(load, every); }
      })
      .catch(function () {
        say("The service could not be reached; trying again.", "warning");
        timer = window.setTimeout(load, every);
      });
  }
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var value = input.value.trim();
    input.value = "";
    if (value) { keep(value); }
    load();
  });
  forgetButton.addEventListener("click", function () {
    forget();
    window.clearTimeout(timer);
    ask();
    say("The token is forgotten.");
  });
  load();
})();
""".replace("TOKEN_KEY", TOKEN_KEY)


def team_page(kind):
    """The page of one of a team's ``kind`` (``submission`` or ``job``): the same text for every id."""
    api, title, what = KINDS[kind]
    body = (
        f'<p class="note">This page shows one {escape(kind)} of your team ({escape(what)}) as the service '
        "answers it to your team's token. The token stays in this browser tab (sessionStorage) until the tab "
        "is closed or you forget it; it is sent only to this service, in the Authorization header.</p>\n"
        '<form class="token" id="token-form" hidden autocomplete="off">'
        '<label for="token">Team token</label>'
        '<input type="password" id="token" name="token" autocomplete="off" spellcheck="false" placeholder="ember_…">'
        '<button type="submit">Show</button></form>\n'
        '<p id="message" class="note" role="status"></p>\n'
        '<button type="button" class="forget" id="forget" hidden>Forget the token</button>\n'
        '<div id="shown"></div>'
    )
    header = '<nav><a href="/">All boards</a></nav>'
    attributes = f' data-kind="{escape(kind)}" data-api="{escape(api)}" data-poll-ms="{POLL_MS}"'
    page = document(
        f"EMBER {title.lower()}",
        header,
        section(kind, title, body),
        "Made by <code>ember service</code>. Nothing of your team's is in this page's file: the script asks the API.",
        f"ember service (ranking {RANKING_VERSION})",
        _SCRIPT,
        attributes,
    )
    return page.replace("</style>", _TEAM_CSS + "</style>", 1)
