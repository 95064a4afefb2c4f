/* Cairn dashboard behaviour. No inline script anywhere: the CSP forbids it. */
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="cairn-csrf"]');
    return meta ? meta.content : "";
  }

  function flash(text, kind) {
    var box = document.getElementById("flash");
    if (!box) return;
    box.textContent = text;
    box.className = "flash show " + (kind || "");
    window.clearTimeout(flash.timer);
    flash.timer = window.setTimeout(function () { box.className = "flash"; box.textContent = ""; }, 6000);
  }

  // Every htmx request carries the CSRF header the worker requires on cookie-authenticated writes.
  document.addEventListener("htmx:configRequest", function (evt) {
    evt.detail.headers["X-Cairn-CSRF"] = csrf();
  });

  // A 401 means the session ended (e.g. the token was rotated): reload to show the login page.
  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status === 401) { window.location.reload(); return; }
    var message = "Request failed";
    try {
      var body = JSON.parse(xhr.responseText);
      if (body && body.error && body.error.message) message = body.error.message;
    } catch (e) { /* not JSON */ }
    flash(message + " (HTTP " + (xhr ? xhr.status : "?") + ")", "error");
  });
  document.addEventListener("htmx:sendError", function () {
    flash("The Cairn worker does not answer. Is it running?", "error");
  });

  // "/" focuses the page's main search box (or the header one) unless you are typing.
  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "/" || evt.ctrlKey || evt.metaKey || evt.altKey) return;
    var t = evt.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.querySelector("[data-slash-focus][data-primary]") ||
      document.querySelector("[data-slash-focus]");
    if (box) { evt.preventDefault(); box.focus(); if (box.select) box.select(); }
  });

  // ---------------------------------------------------------------- live feed
  var paused = false;
  var queued = [];

  function setStatus(state, text) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }

  function feedFilters() {
    var live = document.getElementById("feed-live");
    return {
      project: live ? live.dataset.project || "" : "",
      type: live ? live.dataset.type || "" : "",
      agent: live ? live.dataset.agent || "" : ""
    };
  }

  function reloadFeed() {
    htmx.ajax("GET", window.location.pathname + window.location.search,
      { target: "#feed-body", select: "#feed-body", swap: "outerHTML" });
  }

  function applyEvent(name, data) {
    if (name === "stream.reset") { reloadFeed(); return; }
    var list = document.getElementById("feed-items");
    if (!list || !data || typeof data.id !== "number") return;
    var kind = name.split(".")[0];
    var existing = document.getElementById(kind + "-" + data.id);
    if (/\.deleted$/.test(name)) {
      if (existing) existing.remove();
      return;
    }
    if (name === "observation.updated" && !existing) return;  // archived/restored elsewhere
    var f = feedFilters();
    var url = "/feed/item/" + encodeURIComponent(kind) + "/" + data.id +
      "?project=" + encodeURIComponent(f.project) + "&type=" + encodeURIComponent(f.type) +
      "&agent=" + encodeURIComponent(f.agent) + "&event=" + encodeURIComponent(name);
    var empty = document.getElementById("feed-empty");
    if (existing) {
      htmx.ajax("GET", url, { target: existing, swap: "outerHTML" });
    } else {
      htmx.ajax("GET", url, { target: list, swap: "afterbegin" }).then(function () {
        if (empty && list.children.length) empty.remove();
      });
    }
  }

  // The sse extension hands us each event before swapping; we never swap raw event data
  // (it is JSON, not HTML): we fetch the server-rendered, escaped entry instead.
  document.addEventListener("htmx:sseBeforeMessage", function (evt) {
    evt.preventDefault();
    var msg = evt.detail;
    var data = null;
    try { data = JSON.parse(msg.data); } catch (e) { return; }
    if (paused) {
      queued.push([msg.type, data]);
      setStatus("paused", "Paused · " + queued.length + " new");
      return;
    }
    applyEvent(msg.type, data);
  });
  document.addEventListener("htmx:sseOpen", function () {
    if (!paused) setStatus("live", "Live");
  });
  document.addEventListener("htmx:sseError", function () {
    setStatus("offline", "Reconnecting…");
  });

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest ? evt.target.closest("#feed-pause") : null;
    if (!button) return;
    paused = !paused;
    button.setAttribute("aria-pressed", paused ? "true" : "false");
    button.textContent = paused ? button.dataset.resumeLabel : button.dataset.pauseLabel;
    if (paused) {
      setStatus("paused", "Paused");
    } else {
      var pending = queued;
      queued = [];
      pending.forEach(function (item) { applyEvent(item[0], item[1]); });
      setStatus("live", "Live");
    }
  });

  // After a filter change the feed body is replaced: forget events queued for the old filters.
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (document.getElementById("feed-live") && evt.detail.requestConfig &&
        evt.detail.requestConfig.path.split("?")[0] === "/") {
      queued = [];
      if (!paused) setStatus("connecting", "Connecting…");
    }
  });
})();
