// cronlock status page: keeps the server-rendered page current by polling
// the JSON API. Every value from jobs or their output is put into the DOM
// with textContent (never innerHTML), so it is shown as text and can never
// run. Formatting mirrors internal/web/format.go.
"use strict";

(function () {
  var NONE = "\u2014";
  var body = document.body;
  var admin = body.dataset.admin === "true";
  var interval = Number(body.dataset.interval) || 1000;
  var last = "";     // the last API response text, to skip identical renders
  var timer = null;

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function fmtTime(s) {
    if (!s) { return NONE; }
    var d = new Date(s);
    if (isNaN(d.getTime()) || d.getTime() <= 0) { return NONE; }
    return d.toISOString().slice(0, 19).replace("T", " ") + "Z";
  }

  function fmtSeconds(sec) {
    if (!(sec > 0)) { return NONE; }
    if (sec < 60) { return sec.toFixed(1) + "s"; }
    var s = Math.floor(sec);
    if (sec < 3600) { return Math.floor(s / 60) + "m" + pad(s % 60) + "s"; }
    var m = Math.floor(s / 60);
    return Math.floor(m / 60) + "h" + pad(m % 60) + "m";
  }

  function fmtNext(s) {
    if (!s) { return NONE; }
    var d = (new Date(s).getTime() - Date.now()) / 1000;
    if (d < 1) { return fmtTime(s) + " (due)"; }
    return fmtTime(s) + " (in " + fmtSeconds(d) + ")";
  }

  // nextCell is a job's next run: none while suspended, "ended" past its
  // end_at (or a one-off's at).
  function nextCell(j) {
    if (j.ended) { return el("span", { "class": "ended", text: "ended " + fmtTime(j.ended) }); }
    return j.suspended ? NONE : fmtNextIn(j);
  }

  function fmtToken(t) { return t ? String(t) : NONE; }

  function fmtOffset(o) {
    if (o === null || o === undefined) { return NONE; }
    var ms = Math.round(o * 1000); // no "-0.000s" for a tiny negative offset
    if (ms === 0) { ms = 0; } // -0 too
    return (ms >= 0 ? "+" : "-") + (Math.abs(ms) / 1000).toFixed(3) + "s";
  }

  // el builds an element; children are nodes or strings (made text nodes).
  function el(tag, attrs) {
    var e = document.createElement(tag);
    var k;
    for (k in attrs || {}) {
      if (k === "text") { e.textContent = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
    }
    for (k = 2; k < arguments.length; k++) {
      var c = arguments[k];
      if (c === null || c === undefined) { continue; }
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  function muted(text) { return el("span", { "class": "muted", text: text }); }

  // sourceNote marks a job defined at run time in the job list.
  function sourceNote(j) {
    return j.source === "runtime" ? el("span", { "class": "muted source", text: " · runtime" }) : el("span");
  }

  function statusBadge(st) {
    if (!st) { return muted("never run"); }
    return el("span", { "class": "badge st-" + st, text: st });
  }

  // jobStatus is a job's last status, or "corrupt" (with why, as a tooltip)
  // while its shared record cannot be read.
  function jobStatus(j) {
    if (j.state === "corrupt") { return el("span", { "class": "badge st-corrupt", title: j.error || "", text: "corrupt" }); }
    return statusBadge(j.last_status);
  }

  function suspendedCell(s) {
    return s ? el("span", { "class": "badge st-suspended", text: "suspended" }) : "no";
  }

  function actionButtons(job) {
    var f = document.createDocumentFragment();
    f.appendChild(el("button", { type: "button", "data-action": "trigger", "data-job": job.name, text: "Trigger" }));
    f.appendChild(document.createTextNode(" "));
    var act = job.suspended ? "resume" : "suspend";
    f.appendChild(el("button", { type: "button", "data-action": act, "data-job": job.name,
      text: job.suspended ? "Resume" : "Suspend" }));
    if (job.running) {
      f.appendChild(document.createTextNode(" "));
      f.appendChild(el("button", { type: "button", "data-action": "cancel", "data-job": job.name, text: "Cancel" }));
    }
    return f;
  }

  function td(cls, label) {
    var args = [ "td", { "class": cls, "data-label": label } ].concat([].slice.call(arguments, 2));
    return el.apply(null, args);
  }

  function jobRow(j) {
    var lock = j.running
      ? el("span", null, j.holder || "", " ", muted("token " + fmtToken(j.token)))
      : muted("free");
    var tr = el("tr", { "data-job": j.name },
      td("name", "Job", el("a", { href: "/jobs/" + encodeURIComponent(j.name), text: j.name })),
      td("schedule", "Schedule", el("code", { text: j.schedule }), " ", muted(j.timezone), sourceNote(j)),
      td("next", "Next run", nextCell(j)),
      td("status", "Last status", jobStatus(j)),
      td("history", "History", strip(j), " ", rateText(j)),
      td("last", "Last run", fmtTime(j.last_start), lastOwner(j)),
      td("duration", "Duration", fmtSeconds(j.last_duration_seconds)),
      td("lock", "Lock", lock),
      td("suspended", "Suspended", suspendedCell(j.suspended)));
    if (admin) { tr.appendChild(td("actions", "Actions", actionButtons(j))); }
    return tr;
  }

  // labelsText is a replica's labels as "key=value" pairs, sorted (the
  // server's LabelText); "" for none.
  function labelsText(labels) {
    return Object.keys(labels || {}).sort().map(function (k) { return k + "=" + labels[k]; }).join(", ");
  }

  function replicaRow(r) {
    var running = r.running && r.running.length ? r.running.join(", ") : muted("idle");
    return el("tr", { "data-owner": r.owner },
      td("owner", "Owner", r.owner),
      td("host", "Host", r.host),
      td("pid", "PID", String(r.pid)),
      td("version", "Version", r.version),
      td("started", "Started", fmtTime(r.started)),
      td("seen", "Last seen", fmtTime(r.seen)),
      td("running", "Running", running),
      td("offset", "Clock offset", fmtOffset(r.clock_offset_seconds)),
      td("labels", "Labels", labelsText(r.labels) || muted("none")));
  }

  function fillBody(tableId, items, row, emptyText, cols) {
    var tbody = document.querySelector("#" + tableId + " tbody");
    if (!tbody) { return; }
    var f = document.createDocumentFragment();
    items.forEach(function (it) { f.appendChild(row(it)); });
    if (!items.length) {
      f.appendChild(el("tr", { "class": "empty" }, el("td", { colspan: String(cols), "class": "muted", text: emptyText })));
    }
    tbody.replaceChildren(f);
  }

  // jobsURL asks for the page's window of the jobs when it shows one
  // (more jobs than the page shows at once), else for all of them.
  function jobsURL() {
    if (!body.dataset.limit) { return "/api/jobs"; }
    var u = "/api/jobs?limit=" + encodeURIComponent(body.dataset.limit);
    if (body.dataset.match) { u += "&q=" + encodeURIComponent(body.dataset.match); }
    return body.dataset.after ? u + "&after=" + encodeURIComponent(body.dataset.after) : u;
  }

  function renderIndex(data) {
    var total = document.getElementById("jobs-total");
    if (total) { total.textContent = String(data.total); }
    fillBody("jobs", data.jobs, jobRow, body.dataset.limit ? "No jobs" + (body.dataset.match ? " whose names contain “" + body.dataset.match + "”" : "") +
      (body.dataset.after ? " after " + body.dataset.after : "") + "." : "No jobs configured.", 10);
    fillBody("replicas", data.replicas, replicaRow, "No live replicas.", 9);
  }

  function backfillText(b) {
    return b.done + " of " + b.total + " tick(s) started, from " + fmtTime(b.from) + " to " + fmtTime(b.to) +
      (b.by ? " (by " + b.by + ")" : "");
  }

  // backfill posts the job view's backfill form: a dry run lists the
  // ticks, a backfill starts them; the answer is shown as the message.
  function backfill(form, dry) {
    var job = form.dataset.job;
    var input = tokenInput();
    var body = JSON.stringify({ from: form.elements.from.value.trim(), to: form.elements.to.value.trim(), dry_run: dry });
    fetch("/api/jobs/" + encodeURIComponent(job) + "/backfill", {
      method: "POST",
      headers: { Authorization: "Bearer " + (input ? input.value : ""), Accept: "application/json", "Content-Type": "application/json" },
      body: body, cache: "no-store"
    }).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (b) {
        if (!resp.ok) {
          showMessage("backfill " + job + " refused (" + resp.status + "): " + (b.error || resp.statusText), true);
          return;
        }
        var n = (b.ticks || []).length;
        showMessage((dry ? "backfill " + job + " would run " : "backfill " + job + ": started ") + n + " tick(s)" +
          (n ? ": " + b.ticks.map(fmtTime).join(", ") : ""), false);
      });
    }, function (err) {
      showMessage("backfill " + job + " failed: " + err.message, true);
    }).then(function () { last = ""; return poll(); });
  }

  function fact(dl, label, cls, value) {
    dl.appendChild(el("dt", { text: label }));
    dl.appendChild(el("dd", { "class": cls }, value));
  }

  function runArticle(r) {
    var h = el("h3", null, statusBadge(r.status), " ", el("span", { "class": "tick", text: fmtTime(r.tick) }));
    if (r.manual) { h.appendChild(document.createTextNode(" ")); h.appendChild(el("span", { "class": "badge", text: "manual" })); }
    if (r.backfill) { h.appendChild(document.createTextNode(" ")); h.appendChild(el("span", { "class": "badge", text: "backfill" })); }
    var dl = el("dl", { "class": "facts" });
    fact(dl, "Owner", "owner", r.owner);
    fact(dl, "Token", "token", fmtToken(r.token));
    fact(dl, "Attempts", "attempts", String(r.attempts));
    fact(dl, "Started", "start", fmtTime(r.start));
    fact(dl, "Ended", "end", fmtTime(r.end));
    fact(dl, "Duration", "duration", fmtSeconds(r.duration_seconds));
    fact(dl, "Exit code", "exit", r.exit_code === null || r.exit_code === undefined ? NONE : String(r.exit_code));
    if (r.error) { fact(dl, "Error", "run-error", r.error); }
    if (r.reason) { fact(dl, "Reason", "reason", r.reason); }
    if (r.by) { fact(dl, "Cancelled by", "by", r.by); }
    var a = el("article", { "class": "run", "data-tick": r.tick }, h, dl);
    if (r.output) { a.appendChild(el("pre", { "class": "output", text: r.output })); }
    return a;
  }

  function renderJob(d) {
    var sum = document.getElementById("summary");
    if (sum) {
      sum.replaceChildren();
      fact(sum, "Schedule", "schedule", el("span", null, el("code", { text: d.schedule }), " ", muted(d.timezone)));
      fact(sum, "Defined", "source", d.source === "runtime"
        ? el("span", null, "at run time ", muted("revision " + d.revision))
        : el("span", { text: "in the configuration file" }));
      fact(sum, "Next run", "next", nextCell(d));
      fact(sum, "Last status", "status", jobStatus(d));
      fact(sum, "Suspended", "suspended", suspendedCell(d.suspended));
      if (d.backfill) { fact(sum, "Backfill", "backfill", backfillText(d.backfill)); }
    }
    renderGlance(d);
    var acts = document.getElementById("actions");
    if (acts) { acts.replaceChildren(actionButtons(d)); }
    var lock = document.getElementById("lock");
    if (lock) {
      lock.replaceChildren();
      if (d.lock) {
        fact(lock, "Holder", "owner", d.lock.owner);
        fact(lock, "Token", "token", fmtToken(d.lock.token));
        fact(lock, "Acquired", "acquired", fmtTime(d.lock.acquired_at));
        fact(lock, "Expires", "expires", fmtTime(d.lock.expires_at));
      } else {
        lock.appendChild(el("dt", { text: "Holder" }));
        lock.appendChild(el("dd", { "class": "owner muted", text: "not held" }));
      }
    }
    var runs = document.getElementById("runs");
    if (runs) {
      var f = document.createDocumentFragment();
      d.runs.forEach(function (r) { f.appendChild(runArticle(r)); });
      if (!d.runs.length) { f.appendChild(el("p", { "class": "muted empty", text: "No runs yet." })); }
      runs.replaceChildren(f);
    }
  }


  // ---- The history at a glance (mirrors internal/web/glance.go) ----

  // CELL_STATUSES have a colour of their own; a failure (the API's
  // "failed", the scheduler's definition) has one; the rest are neutral.
  var CELL_STATUSES = { succeeded: true, missed: true, skipped: true, cancelled: true, running: true };
  var RATE_TITLE = "succeeded of the runs shown that ran and ended";
  var SVG_NS = "http://www.w3.org/2000/svg";

  function cellClass(r) {
    if (r.failed) { return "failed"; }
    return CELL_STATUSES[r.status] ? r.status : "other";
  }

  function cellTitle(r) { return r.status + " \u00b7 " + fmtTime(r.tick) + " \u00b7 " + fmtSeconds(r.duration_seconds); }

  function fmtRate(rate) {
    if (rate === null || rate === undefined || isNaN(rate)) { return NONE; }
    return Math.round(rate * 100) + "%";
  }

  // fmtNextIn is the next tick in the job's own zone when the API gave it
  // (next_local), else in UTC, with how far away it is.
  function fmtNextIn(j) {
    if (!j.next_local || !j.next) { return fmtNext(j.next); }
    var d = (new Date(j.next).getTime() - Date.now()) / 1000;
    return j.next_local + (d < 1 ? " (due)" : " (in " + fmtSeconds(d) + ")");
  }

  // strip is a job's newest runs as cells, oldest left.
  function strip(j) {
    var s = el("span", { "class": "strip", "aria-label": "last runs, oldest first" });
    (j.recent_runs || []).slice().reverse().forEach(function (r) {
      s.appendChild(el("span", { "class": "cell c-" + cellClass(r), title: cellTitle(r) }));
    });
    return s;
  }

  function rateText(j) { return el("span", { "class": "rate", title: RATE_TITLE, text: fmtRate(j.success_rate) }); }

  function lastOwner(j) {
    return j.last_owner ? el("span", null, " ", el("span", { "class": "muted last-owner", text: "on " + j.last_owner })) : null;
  }

  function svg(tag, attrs) {
    var e = document.createElementNS(SVG_NS, tag);
    var k;
    for (k in attrs || {}) {
      if (k === "text") { e.textContent = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
    }
    for (k = 2; k < arguments.length; k++) { if (arguments[k]) { e.appendChild(arguments[k]); } }
    return e;
  }

  // runSeconds is a run's duration, or for a running run how long it has
  // run so far.
  function runSeconds(r) {
    if (r.status === "running" && r.start) { return Math.max(0, (Date.now() - new Date(r.start).getTime()) / 1000); }
    return r.duration_seconds || 0;
  }

  // CHART is the duration chart's geometry in SVG units (it scales to the
  // page's width); a bar is never lower than minBar, so a missed tick shows.
  var CHART = { w: 640, h: 170, left: 56, right: 8, top: 10, bottom: 28, maxBar: 28, minBar: 2 };

  // durationChart draws runs (newest first, as the API lists them) as
  // bars, oldest left, coloured by status, with a labelled time axis.
  function durationChart(runs) {
    if (!runs.length) { return el("p", { "class": "muted", text: "No runs yet." }); }
    var c = CHART, rs = runs.slice().reverse();
    var secs = rs.map(runSeconds);
    var max = Math.max.apply(null, secs);
    if (!(max > 0)) { max = 1; }
    var plotW = c.w - c.left - c.right, plotH = c.h - c.top - c.bottom, base = c.top + plotH;
    var step = plotW / rs.length, bw = Math.max(1, Math.min(c.maxBar, step * 0.75));
    var root = svg("svg", { viewBox: "0 0 " + c.w + " " + c.h, role: "img",
      "aria-label": "durations of the last " + rs.length + " runs, oldest left" });
    root.appendChild(svg("line", { "class": "axis", x1: c.left, y1: c.top, x2: c.left, y2: base }));
    root.appendChild(svg("line", { "class": "axis", x1: c.left, y1: base, x2: c.w - c.right, y2: base }));
    root.appendChild(svg("text", { "class": "tick-label y-max", x: c.left - 6, y: c.top + 8, "text-anchor": "end", text: fmtSeconds(max) }));
    root.appendChild(svg("text", { "class": "tick-label y-min", x: c.left - 6, y: base, "text-anchor": "end", text: "0s" }));
    root.appendChild(svg("text", { "class": "axis-label x-label", x: c.left + plotW / 2, y: c.h - 6, "text-anchor": "middle",
      text: "last " + rs.length + " runs, oldest left \u00b7 bar height: duration" }));
    rs.forEach(function (r, i) {
      var h = Math.max(c.minBar, secs[i] / max * plotH);
      var x = c.left + i * step + (step - bw) / 2;
      root.appendChild(svg("rect", { "class": "bar c-" + cellClass(r), "data-status": r.status,
        x: x.toFixed(1), y: (base - h).toFixed(1), width: bw.toFixed(1), height: h.toFixed(1) },
        svg("title", { text: cellTitle({ status: r.status, tick: r.tick, duration_seconds: secs[i] }) })));
    });
    return root;
  }

  // definitionFacts shows a job's settings as glance.go's template does:
  // a run-control key only when present and not its default.
  function definitionFacts(dl, s) {
    if (s.kind) { fact(dl, "Kind", "kind", el("code", { text: s.kind })); }
    else if (s.command && s.command.length) { fact(dl, "Command", "command", el("code", { text: s.command.join(" ") })); }
    else if (s.shell) { fact(dl, "Shell", "shell", el("code", { text: s.shell })); }
    if (s.dir) { fact(dl, "Directory", "dir", el("code", { text: s.dir })); }
    fact(dl, "Timeout", "timeout", s.timeout || "none");
    fact(dl, "Retries", "retries", el("span", null, String(s.retries || 0),
      s.retry_backoff ? " " : null, s.retry_backoff ? muted("every " + s.retry_backoff) : null));
    fact(dl, "Starting deadline", "starting-deadline", s.starting_deadline || "none (no catch-up)");
    if (s.start_at) { fact(dl, "Starts at", "start-at", s.start_at); }
    if (s.end_at) { fact(dl, "Ends at", "end-at", s.end_at); }
    if (s.jitter) { fact(dl, "Jitter", "jitter", s.jitter); }
    if (s.grace) { fact(dl, "Grace", "grace", s.grace); }
    if (s.on_interrupt) { fact(dl, "On interrupt", "on-interrupt", s.on_interrupt); }
    if (s.overlap && s.overlap !== "skip") { fact(dl, "Overlap", "overlap", s.overlap); }
    if (s.max_parallel > 1) { fact(dl, "Max parallel", "max-parallel", String(s.max_parallel)); }
    if (s.group) { fact(dl, "Group", "group", s.group); }
    if (s.run_on && s.run_on !== "one") { fact(dl, "Runs on", "run-on", s.run_on); }
    if (s.on_replicas) { fact(dl, "On replicas", "on-replicas", labelsText(s.on_replicas)); }
  }

  // renderGlance draws the job view's duration chart and definition.
  function renderGlance(d) {
    var chart = document.getElementById("durations");
    if (chart) { chart.replaceChildren(durationChart(d.runs)); }
    var def = document.getElementById("definition");
    if (def) {
      def.replaceChildren();
      if (d.settings) { definitionFacts(def, d.settings); }
      document.getElementById("definition-section").hidden = !d.settings;
    }
  }

  function setUpdated(text, stale) {
    var u = document.getElementById("updated");
    if (!u) { return; }
    u.textContent = text;
    u.classList.toggle("stale", !!stale);
  }

  function getJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" }).then(function (resp) {
      return resp.text().then(function (text) {
        // The read token changed or the session ended: the page itself
        // now answers with the login form.
        if (resp.status === 401) { location.reload(); }
        if (!resp.ok) { throw new Error(resp.status + " " + text); }
        return text;
      });
    });
  }

  // poll fetches the page's data and renders it when it changed.
  function poll() {
    var p;
    if (body.dataset.page === "job") {
      p = getJSON("/api/jobs/" + encodeURIComponent(body.dataset.job)).then(function (t) {
        if (t !== last) { last = t; renderJob(JSON.parse(t)); }
      });
    } else {
      p = Promise.all([ getJSON(jobsURL()), getJSON("/api/replicas") ]).then(function (ts) {
        var t = ts[0] + ts[1];
        if (t !== last) {
          last = t;
          var jobs = JSON.parse(ts[0]);
          renderIndex({ jobs: jobs.jobs, total: jobs.total, replicas: JSON.parse(ts[1]).replicas });
        }
      });
    }
    return p.then(function () {
      var e = document.getElementById("error");
      if (e && body.dataset.page === "index") { e.remove(); }
      setUpdated("live · updated " + fmtTime(new Date().toISOString()), false);
    }, function (err) {
      setUpdated("stale · " + err.message, true);
    });
  }

  function schedule() {
    clearTimeout(timer);
    if (document.visibilityState === "hidden") { return; }
    timer = setTimeout(function () { poll().then(schedule); }, interval);
  }

  function showMessage(text, bad) {
    var m = document.getElementById("message");
    if (!m) { return; }
    m.textContent = text;
    m.hidden = false;
    m.classList.toggle("bad", !!bad);
  }

  function tokenInput() { return document.getElementById("token"); }

  function act(button) {
    var job = button.dataset.job;
    var action = button.dataset.action;
    var input = tokenInput();
    var token = input ? input.value : "";
    button.disabled = true;
    fetch("/api/jobs/" + encodeURIComponent(job) + "/" + action, {
      method: "POST",
      headers: { Authorization: "Bearer " + token, Accept: "application/json" },
      cache: "no-store"
    }).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (b) {
        if (resp.ok) {
          showMessage(action + " " + job + ": done", false);
        } else {
          showMessage(action + " " + job + " refused (" + resp.status + "): " + (b.error || resp.statusText), true);
        }
      });
    }, function (err) {
      showMessage(action + " " + job + " failed: " + err.message, true);
    }).then(function () {
      button.disabled = false;
      last = "";
      return poll();
    });
  }

  function init() {
    if (body.dataset.page === "login") { return; } // a form, nothing to poll
    var input = tokenInput();
    if (input) {
      input.value = sessionStorage.getItem("cronlock.adminToken") || "";
      input.addEventListener("input", function () {
        sessionStorage.setItem("cronlock.adminToken", input.value);
      });
    }
    document.addEventListener("click", function (ev) {
      var b = ev.target.closest && ev.target.closest("button[data-action]");
      if (b && admin) { act(b); }
    });
    var bf = document.getElementById("backfill");
    if (bf && admin) {
      bf.addEventListener("submit", function (ev) {
        ev.preventDefault();
        backfill(bf, !!(ev.submitter && ev.submitter.value === "dry"));
      });
    }
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") { poll().then(schedule); } else { clearTimeout(timer); }
    });
    // The job view's chart is drawn only by this script: fetch at once.
    if (body.dataset.page === "job") { poll().then(schedule); } else { schedule(); }
  }

  init();
}());
