// The one vocabulary of states (rein.web.states), embedded in every page: a badge or a box
// the script changes reads the same word and tone as one the server rendered.
var reinStates = (function () {
  "use strict";
  var table = {};
  var el = document.getElementById("rein-states");
  try { table = el ? JSON.parse(el.textContent) : {}; } catch (err) { table = {}; }
  function look(state) { return table[state] || [String(state || ""), "idle"]; }
  return {
    look: look,
    badge: function (node, state) {
      var l = look(state);
      node.className = "status tone-" + l[1];
      node.setAttribute("data-state", state || "");
      node.textContent = l[0];
    },
    box: function (g, state) {
      g.setAttribute("data-status", state);
      g.setAttribute("data-tone", look(state)[1]);
    }
  };
}());
// rein web console: follow a run's event stream and patch the page. The server renders the
// page from the store; this script only applies the events that came after it, so a reload
// and a live page show the same thing. EventSource resends Last-Event-ID on reconnect.
(function () {
  "use strict";
  var body = document.body;
  var runs = body.getAttribute("data-runs-stream");
  if (runs && window.EventSource) {  // the runs list: the server sends the table body
    var list = null;
    var follow = function () {
      if (document.hidden) { if (list) { list.close(); list = null; } return; }
      if (list) { return; }
      list = new EventSource(runs);
      list.addEventListener("runs", function (msg) {
        var tbody = document.getElementById("runs");
        if (tbody) { tbody.innerHTML = JSON.parse(msg.data).html; }
      });
    };
    document.addEventListener("visibilitychange", follow);
    follow();
  }
  var stream = body.getAttribute("data-stream");
  if (!stream || !window.EventSource) { return; }
  var log = document.querySelector("ol.log");
  var statusBadge = document.querySelector("[data-run-status]");
  var seen = {};  // scope instances seen per container, for the iteration / item counts

  function top(key) {  // "count_down[2].tick" -> "count_down"; "size_up" -> "size_up"
    var m = /^([^.[]+)/.exec(key || "");
    return m ? m[1] : null;
  }

  function patchNode(key, status) {
    if (!key) { return; }
    var scope = body.getAttribute("data-scope") || "";
    var local = key;
    if (scope) {
      if (key.indexOf(scope) !== 0) { return; }
      local = key.slice(scope.length).replace(/^\[\d+\]\./, "");
    }
    var g = document.querySelector('svg.dag g.node[data-node="' + CSS.escape(local) + '"]');
    if (g && g.getAttribute("data-type") === "subgraph" && !g.closest("a")) {
      want();  // its child run's link comes with the picture drawn again
    }
    if (g && status) { reinStates.box(g, status); return; }
    var owner = top(local);
    var m = /^[^.[]+\[(\d+)\]/.exec(local);
    if (!g && !m && !asked[local]) { asked[local] = true; want(); }
    if (owner && m) {  // a node inside a loop or map body: count its instances
      var box = document.querySelector('[data-count-of="' + CSS.escape(owner) + '"]');
      var set = seen[owner] = seen[owner] || {};
      set[m[1]] = true;
      if (box) {
        var n = Math.max(Object.keys(set).length, parseInt(box.getAttribute("data-n") || "0", 10));
        box.setAttribute("data-n", String(n));
        box.textContent = " · " + n + " ran";
      }
    }
  }

  function line(ev) {
    if (!log) { return; }
    var li = document.createElement("li");
    li.setAttribute("data-seq", String(ev.seq));
    var seq = document.createElement("span"); seq.className = "seq"; seq.textContent = ev.seq;
    var text = document.createElement("span");
    text.textContent = " " + ev.type + (ev.summary ? " " + ev.summary : "");
    var stamp = when(ev.at);  // read the previous line's date before this one is added
    li.appendChild(seq); li.appendChild(document.createTextNode(" "));
    li.appendChild(stamp); li.appendChild(text);
    log.appendChild(li);
    if (!scrolling) {  // reading scrollHeight lays the page out: once a frame, not per event
      scrolling = true;
      window.requestAnimationFrame(function () { scrolling = false; log.scrollTop = log.scrollHeight; });
    }
  }
  var scrolling = false;
  // An event's time as the server writes it (html.moment): UTC, the date where it changes.
  function when(at) {
    var t = document.createElement("time");
    var d = new Date(at);
    if (isNaN(d.getTime())) { t.textContent = at || ""; return t; }
    var iso = d.toISOString();
    var last = log.lastElementChild && log.lastElementChild.querySelector("time");
    var before = last ? last.getAttribute("datetime") || "" : "";
    t.setAttribute("datetime", iso); t.setAttribute("title", iso);
    t.textContent = before.slice(0, 10) === iso.slice(0, 10) ? iso.slice(11, 19) :
      iso.slice(0, 10) + " " + iso.slice(11, 19) + " UTC";
    return t;
  }
  // The questions the run waits on, drawn again when one is asked or answered (the same
  // cards the server renders), unless someone is typing into one.
  var cards = document.querySelector("[data-approvals]"), cardsBusy = false, cardsAgain = false;
  function refreshCards() {
    if (!cards) { return; }
    if (cardsBusy) { cardsAgain = true; return; }
    cardsBusy = true;
    fetch(fragmentUrl + "?approvals=1", {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.json(); }).then(function (data) {
        if (typeof data.approvals === "string" && !cards.querySelector("[data-edited]") &&
            cards.innerHTML !== data.approvals) { cards.innerHTML = data.approvals; }
      }, function () {})
      .then(function () { cardsBusy = false; if (cardsAgain) { cardsAgain = false; refreshCards(); } });
  }

  // Nodes that first appear mid-run (map items, loop iterations) are not in the page the
  // server rendered: a row is made for each from its events, and its attempts are fetched
  // when the row is opened. A box that lacks something (a subgraph's child-run link) has
  // the picture fetched again, one request at a time; the node events that came while it
  // was on its way are applied again over what it brought.
  var nodesBox = document.querySelector("[data-nodes]");
  var fragmentUrl = stream.replace(/\/events\?.*$/, "/fragment");
  var wantSvg = false, fetching = false, asked = {}, recent = [];
  function detail(key) {
    return document.querySelector('[data-node-detail="' + CSS.escape(key || "") + '"]');
  }
  function want() {
    wantSvg = true;
    if (!fetching) { fetchPicture(); }
  }
  function fetchPicture() {
    if (!wantSvg) { return; }
    wantSvg = false; fetching = true;
    var url = fragmentUrl + "?svg=1&scope=" + encodeURIComponent(body.getAttribute("data-scope") || "");
    fetch(url, {credentials: "same-origin"}).then(function (r) { return r.json(); })
      .then(function (data) {
        var wrap = document.querySelector(".dagwrap");
        if (wrap && data.svg) { wrap.innerHTML = data.svg; }
        recent.forEach(function (ev) { if (ev.seq > data.last) { applyNode(ev); } });
        recent = [];
      }, function () {})
      .then(function () { fetching = false; fetchPicture(); });
  }
  function openRow(row, key) {  // the attempts, criteria and record, as a reload shows them
    if (!row.open) { return; }
    fetch(fragmentUrl + "?keys=" + encodeURIComponent(key), {credentials: "same-origin"})
      .then(function (r) { return r.json(); }).then(function (data) {
        if (!data.nodes[key]) { return; }
        var t = document.createElement("template");
        t.innerHTML = data.nodes[key];
        var fresh = t.content.firstElementChild;
        if (fresh) { row.innerHTML = fresh.innerHTML; }
      }, function () {});
  }
  function makeRow(key, status) {
    var row = document.createElement("details");
    row.setAttribute("data-node-detail", key);
    var summary = document.createElement("summary");
    var code = document.createElement("code"); code.textContent = key;
    var badge = document.createElement("span");
    summary.appendChild(code); summary.appendChild(document.createTextNode(" "));
    summary.appendChild(badge); row.appendChild(summary);
    reinStates.badge(badge, status || "");
    row.addEventListener("toggle", function () { openRow(row, key); });
    nodesBox.appendChild(row);
    return row;
  }
  function applyNode(ev) {
    var p = ev.payload || {};
    patchNode(p.node, p.status);
    var row = detail(p.node);
    if (!row && p.node && nodesBox) { row = makeRow(p.node, p.status); }
    var badge = row && row.querySelector("summary .status");
    if (badge && p.status) { reinStates.badge(badge, p.status); }
  }

  function onEvent(msg) {
    var ev = JSON.parse(msg.data);
    // Events come in seq order; one already applied (a reconnect's overlap) is skipped.
    if (ev.seq <= parseInt(body.getAttribute("data-last-seq") || "0", 10)) { return; }
    line(ev);
    var p = ev.payload || {};
    if (ev.type.indexOf("node/") === 0) {
      if (fetching) { recent.push(ev); }
      applyNode(ev);
    }
    var scope = body.getAttribute("data-scope") || "";
    if (ev.type === "edge/resolved" && p.active &&
        String(p.scope || "").replace(/\[\d+\]/g, "") === scope) {
      var e = document.querySelector('svg.dag path.edge[data-from="' + CSS.escape(p.from || "") +
        '"][data-to="' + CSS.escape(p.to || "") + '"]');
      if (e) { e.classList.add("taken"); }
    }
    if (ev.type === "run/finished" || ev.type === "run/paused" || ev.type === "run/resumed") {
      var st = ev.type === "run/finished" ? p.status : (ev.type === "run/paused" ?
        (p.status || "waiting") : "running");
      if (statusBadge) { reinStates.badge(statusBadge, st); }
    }
    if (ev.type.indexOf("approval/") === 0) { refreshCards(); }
    body.setAttribute("data-last-seq", String(ev.seq));
  }
  // A browser opens about six connections per server; each open stream holds one. A tab
  // that is hidden lets its stream go and, shown again, resumes after the last event it
  // applied, so any number of tabs can stay open on the console.
  var source = null;
  function open() {
    if (source || body.getAttribute("data-ended")) { return; }
    var after = body.getAttribute("data-last-seq") || "0";
    source = new EventSource(stream.replace(/after=\d+/, "after=" + after));
    source.onmessage = onEvent;
    source.addEventListener("end", function () {
      source.close(); source = null; body.setAttribute("data-ended", "1");
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && source) { source.close(); source = null; } else if (!document.hidden) { open(); }
  });
  if (!document.hidden) { open(); }  // a tab opened in the background waits until shown
}());
// Threads and the development flow. A thread's page follows its last turn's run over the
// run page's own stream and, for each new event, asks the server for that turn's section
// again (rendered from the store, as on a reload); a watch stream says when the thread has
// a new turn, and the page reloads onto it. The dev page gets its section from its stream.
(function () {
  "use strict";
  var body = document.body;
  if (!window.EventSource) { return; }
  var streams = [];  // [url, open EventSource or null, how to open it]
  function follow(url, setup) { streams.push({ url: url, source: null, setup: setup }); }
  function openAll() {
    streams.forEach(function (s) {
      if (!s.source && !s.ended) { s.source = s.setup(s); }
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      streams.forEach(function (s) { if (s.source) { s.source.close(); s.source = null; } });
    } else { openAll(); }
  });

  // A field someone typed into is theirs until the form is sent: refreshes leave it be.
  document.addEventListener("input", function (e) {
    if (e.target && e.target.setAttribute) { e.target.setAttribute("data-edited", ""); }
  });

  // Bring `old` to what `fresh` shows, touching only what differs: a part that reads the
  // same is the very element it was (its focus, its typed value, a click on its way stay
  // where they are). The turn's section changes its data-last-seq on every event, and
  // replacing it whole made a gate's field someone was filling in a new, empty one.
  function morph(old, fresh) {
    if (old.tagName !== fresh.tagName) { old.replaceWith(fresh); return; }
    Array.prototype.slice.call(fresh.attributes).forEach(function (a) {
      if (old.getAttribute(a.name) !== a.value) { old.setAttribute(a.name, a.value); }
    });
    Array.prototype.slice.call(old.attributes).forEach(function (a) {
      if (!fresh.hasAttribute(a.name) && a.name !== "data-edited") { old.removeAttribute(a.name); }
    });
    if (old.innerHTML === fresh.innerHTML) { return; }
    // The same nodes in the same order, perhaps with more after them (items that arrived):
    // each element is brought up to date in place, the new ones are added at the end.
    var was = Array.prototype.slice.call(old.childNodes);
    var now = Array.prototype.slice.call(fresh.childNodes);
    var alike = now.length >= was.length && was.every(function (n, i) {
      return n.nodeType === now[i].nodeType &&
        (n.nodeType === 1 || n.nodeValue === now[i].nodeValue);
    });
    if (!alike) { old.innerHTML = fresh.innerHTML; return; }
    was.forEach(function (n, i) { if (n.nodeType === 1) { morph(n, now[i]); } });
    now.slice(was.length).forEach(function (n) { old.appendChild(n); });
  }

  var thread = body.getAttribute("data-thread");
  var turn = body.getAttribute("data-thread-turn");
  var runStream = body.getAttribute("data-thread-stream");
  var busy = false, again = false;
  function refresh() {  // one request at a time; events that arrive meanwhile ask once more
    if (busy) { again = true; return; }
    busy = true;
    fetch("/threads/" + encodeURIComponent(thread) + "/turns/" + encodeURIComponent(turn),
          { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var old = document.querySelector('section.turn[data-turn="' + CSS.escape(turn) + '"]');
        if (old && old.querySelector("[data-edited]")) { return; }  // never wipe what is typed
        if (html && old && old.outerHTML !== html) {
          var t = document.createElement("template");
          t.innerHTML = html.trim();
          if (t.content.firstElementChild) { morph(old, t.content.firstElementChild); }
        }
        var now = document.querySelector('section.turn[data-turn="' + CSS.escape(turn) + '"]');
        var badge = document.querySelector("[data-thread-status] .status");
        if (now && badge) {
          var state = now.getAttribute("data-thread-state");
          reinStates.badge(badge, state);
        }
        var compose = document.querySelector("[data-compose]");
        if (now && compose) { compose.hidden = now.getAttribute("data-thread-state") !== "idle"; }
      })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  if (thread && turn && runStream) {
    follow(runStream, function (s) {
      var after = body.getAttribute("data-last-seq") || "0";
      var src = new EventSource(s.url.replace(/after=\d+/, "after=" + after));
      src.onmessage = function (msg) {
        var ev = JSON.parse(msg.data);
        if (ev.seq <= parseInt(body.getAttribute("data-last-seq") || "0", 10)) { return; }
        body.setAttribute("data-last-seq", String(ev.seq));
        refresh();
      };
      src.addEventListener("end", function () {
        src.close(); s.source = null; s.ended = true; refresh();
      });
      return src;
    });
  }
  var watchUrl = body.getAttribute("data-watch");
  if (thread && watchUrl) {
    follow(watchUrl, function () {
      var src = new EventSource(watchUrl);
      src.addEventListener("runs", function (msg) {
        if (JSON.parse(msg.data).html !== body.getAttribute("data-watch-key") &&
            !document.querySelector("[data-edited]")) {
          window.location.reload();
        }
      });
      return src;
    });
  }
  var dev = body.getAttribute("data-dev-stream");
  if (dev) {
    follow(dev, function () {
      var src = new EventSource(dev);
      src.addEventListener("runs", function (msg) {
        var box = document.getElementById("dev-flow");
        var html = JSON.parse(msg.data).html;
        if (box && box.innerHTML !== html) { box.innerHTML = html; }
      });
      return src;
    });
  }
  if (!document.hidden) { openAll(); }  // a tab opened in the background waits until shown
}());
