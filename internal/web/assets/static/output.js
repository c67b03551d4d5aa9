// cronlock status page: the live output of a job's running runs (job view).
// It follows GET /api/jobs/{name}/output (Server-Sent Events) and appends
// each message's text to the <pre id="live-output"> with textContent, so
// the job's output is shown as text and never interpreted. What the
// replica dropped, or the stream missed, is shown in place as a line
// "[... N bytes dropped]" / "[... N messages lost]". The text kept is
// bounded (maxChars): the oldest is cut first.
(function () {
  "use strict";
  var maxChars = 256 * 1024;

  function start() {
    var body = document.body;
    var section = document.getElementById("live");
    var pre = document.getElementById("live-output");
    var label = document.getElementById("live-run");
    if (body.dataset.page !== "job" || !section || !pre || !window.EventSource) { return; }
    var url = "/api/jobs/" + encodeURIComponent(body.dataset.job) + "/output";
    var src = new EventSource(url);
    var current = "";

    function append(text) {
      var t = pre.textContent + text;
      if (t.length > maxChars) { t = t.slice(t.length - maxChars); }
      pre.textContent = t;
      pre.scrollTop = pre.scrollHeight;
    }
    function show(e) {
      var key = e.owner + " " + e.token + " " + e.attempt;
      if (key !== current) {
        current = key;
        pre.textContent = "";
        label.textContent = "Run of " + e.tick + " on " + e.owner + ", attempt " + e.attempt + ": running";
        section.hidden = false;
        section.dataset.state = "running";
      }
      var text = "";
      if (e.lost) { text += "[... " + e.lost + " messages lost]\n"; }
      if (e.dropped) { text += "[... " + e.dropped + " bytes dropped]\n"; }
      append(text + (e.data || ""));
    }
    src.addEventListener("output", function (m) { show(JSON.parse(m.data)); });
    src.addEventListener("end", function (m) {
      var e = JSON.parse(m.data);
      show(e);
      var how = e.error ? "ended: " + e.error : "ended" + (e.exit_code !== undefined ? " (exit " + e.exit_code + ")" : "");
      label.textContent = "Run of " + e.tick + " on " + e.owner + ", attempt " + e.attempt + ": " + how;
      section.dataset.state = "ended";
      current = "";
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
