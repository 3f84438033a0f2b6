// The page of walkie serve. The daemon renders every part of it as HTML,
// having escaped every text an agent wrote; this script only keeps it
// live: it follows the daemon's event stream and swaps in the parts the
// stream sends (parsed with DOMParser, which runs nothing), ticks the
// running sessions' clocks, and posts the controls. Without it the page
// still reads. The Content-Security-Policy allows this file and nothing
// inline.
"use strict";

const meta = (name) => {
  const m = document.querySelector('meta[name="' + name + '"]');
  return m ? m.content : "";
};
const csrf = meta("walkie-csrf");
const base = meta("walkie-base"); // the way back to / from this page
const $ = (id) => document.getElementById(id);

// fragment parses one element the daemon rendered; a table row needs a
// table around it to parse as one.
function fragment(html, row) {
  const doc = new DOMParser().parseFromString(row ? "<table><tbody>" + html + "</tbody></table>" : html, "text/html");
  return row ? doc.querySelector("tbody").firstElementChild : doc.body.firstElementChild;
}

// put replaces the element of the same id, or adds it to parent.
function put(node, parent) {
  if (!node) return;
  const old = node.id && $(node.id);
  if (old) old.replaceWith(node);
  else if (parent) parent.append(node);
  tick();
}

function showLive(on) {
  const l = $("live");
  if (l) l.hidden = !on;
}

// follow opens the page's stream. The browser reconnects by itself and
// sends Last-Event-ID; a stream the daemon refused (too many open, or it
// restarted) is opened again from the last position seen.
function follow(url, handlers) {
  let last = "";
  let delay = 1000;
  const open = () => {
    // The stream's own query (the fleet page's ?all=1) stays; only the
    // position changes.
    const u = new URL(url, document.baseURI);
    if (last) u.searchParams.set("after", last);
    const es = new EventSource(u);
    es.onopen = () => { showLive(true); delay = 1000; };
    for (const [name, fn] of Object.entries(handlers)) {
      es.addEventListener(name, (ev) => {
        if (ev.lastEventId) last = ev.lastEventId;
        fn(ev.data);
      });
    }
    es.onerror = async () => {
      showLive(false);
      if (es.readyState !== EventSource.CLOSED) return;
      const r = await fetch(document.URL, {method: "HEAD", cache: "no-store"}).catch(() => null);
      if (r && r.status === 401) return location.reload(); // the session ended: ask for the token
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    };
  };
  open();
}

// tick redraws how long each running session has run, from its start.
function tick() {
  const now = Date.now();
  for (const t of document.querySelectorAll("time.elapsed")) {
    const s = Math.max(0, Math.floor((now - Date.parse(t.dataset.started)) / 1000));
    t.textContent = (s >= 3600 ? Math.floor(s / 3600) + "h" : "") + (s >= 60 ? Math.floor(s / 60) % 60 + "m" : "") + (s % 60) + "s";
  }
}

// control posts one of the daemon's state-changing requests, with the
// page's CSRF token; the session cookie, when the daemon has a token,
// goes by itself (same origin only).
async function control(form, file) {
  const action = form.dataset.action;
  const body = {file};
  if (action === "halt") body.reason = form.elements.reason.value;
  if (action === "extend") body.rounds = parseInt(form.elements.rounds.value, 10);
  if (action === "note") body.text = form.elements.text.value;
  const msg = $("control-msg");
  msg.textContent = action + "…";
  const r = await fetch(base + "api/" + action, {method: "POST", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", "X-Walkie-CSRF": csrf}});
  const text = (await r.text()).trim();
  if (r.status === 401 || (r.status === 403 && text.includes("CSRF"))) return location.reload(); // the daemon restarted
  // A refusal (409) says itself what was refused ("halt refused: …");
  // any other failure is named here.
  msg.textContent = r.ok ? action + ": done" : r.status === 409 ? text : action + " failed: " + text;
  if (r.ok) form.reset();
}

// applyControls shows the controls the debate's standing offers, as the
// status panel carries them, and hides the others: the page never works
// out for itself what a debate takes.
function applyControls() {
  const st = $("status");
  const controls = $("controls");
  if (!st || !controls) return;
  for (const form of controls.querySelectorAll("form")) {
    const offered = st.dataset[form.dataset.action];
    if (offered !== undefined) form.hidden = offered !== "true";
  }
}

// applyFilter shows the fleet rows whose names, files, status and runner
// hold every word of the filter, and keeps the filter in the address (and
// the scope switch's links), so a reload or a switch keeps it.
function applyFilter() {
  const f = $("filter");
  const rows = $("rows");
  if (!f || !rows) return;
  const words = f.value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const tr of rows.children) {
    const hit = words.every((w) => (tr.dataset.filter || "").toLowerCase().includes(w));
    tr.hidden = !hit;
    if (hit) shown++;
  }
  $("filter-count").textContent = words.length ? shown + " of " + rows.children.length : "";
  const keep = (u) => {
    if (words.length) u.searchParams.set("q", f.value);
    else u.searchParams.delete("q");
    return u;
  };
  history.replaceState(null, "", keep(new URL(location.href)));
  for (const a of document.querySelectorAll("a.scope-link")) a.href = keep(new URL(a.href));
}

function setupFilter() {
  const f = $("filter");
  if (!f) return;
  f.value = new URL(location.href).searchParams.get("q") || "";
  f.addEventListener("input", applyFilter);
  $("filter-box").hidden = false;
  applyFilter();
}

function setupControls() {
  const controls = $("controls");
  if (!controls) return;
  for (const form of controls.querySelectorAll("form")) {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      control(form, controls.dataset.file);
    });
  }
  controls.hidden = false;
}

function setupLogin() {
  const login = $("login");
  if (!login) return;
  login.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = $("token").value;
    $("token").value = "";
    // Sent once as a header; the daemon answers with a session cookie.
    const r = await fetch(base + "api/session", {headers: {"Authorization": "Bearer " + token}, cache: "no-store"});
    if (r.ok) return location.reload();
    $("login-error").textContent = r.status === 401 ? "That token was refused." : "The daemon answered " + r.status + ".";
  });
  $("token").focus();
}

function start() {
  setupLogin();
  setupControls();
  setupFilter();
  tick();
  setInterval(tick, 1000);
  const stream = meta("walkie-stream");
  if (!stream) return;
  if ($("rows")) {
    follow(stream, {
      row: (html) => {
        const none = $("none");
        if (none) none.remove();
        put(fragment(html, true), $("rows"));
        applyFilter();
      },
      gone: (key) => { const r = $("row-" + key); if (r) r.remove(); },
    });
    return;
  }
  follow(stream, {
    entry: (html) => {
      const node = fragment(html);
      if (node && !$(node.id)) $("entries").append(node);
    },
    turn: (html) => put(fragment(html, true), $("turns")),
    status: (html) => { put(fragment(html)); applyControls(); },
    roundtable: (html) => put(fragment(html)),
    timeline: (html) => put(fragment(html)),
    problem: (text) => { $("control-msg").textContent = text; },
  });
}

start();
