// The live page of walkie serve: polls api/debates every two seconds and
// draws the table with textContent only, so no text from a debate is ever
// parsed as HTML. The daemon's Content-Security-Policy allows this file
// and nothing inline.
"use strict";

const csrf = document.querySelector('meta[name="walkie-csrf"]').content;
const tokenKey = "walkie-token"; // sessionStorage: this tab only, never a URL
const $ = (id) => document.getElementById(id);
let timer = null;

function headers(extra) {
  const h = Object.assign({"X-Walkie-CSRF": csrf}, extra);
  const token = sessionStorage.getItem(tokenKey);
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

function askToken(refused) {
  clearInterval(timer);
  timer = null;
  if (refused) sessionStorage.removeItem(tokenKey);
  $("login-error").textContent = refused ? "That token was refused." : "";
  $("login").hidden = false;
  $("token").focus();
}

$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(tokenKey, $("token").value);
  $("token").value = "";
  $("login").hidden = true;
  start();
});

function cell(row, text, cls) {
  const td = row.insertCell();
  if (cls) td.className = cls;
  if (text instanceof Node) td.append(text); else td.textContent = text ?? "";
  return td;
}

function small(text) {
  const s = document.createElement("small");
  s.textContent = text ?? "";
  return s;
}

// control posts one of the daemon's state-changing requests: the CSRF
// token (and the bearer token, when the daemon has one) go as headers.
async function control(action, body) {
  const r = await fetch("api/" + action, {method: "POST", body: JSON.stringify(body),
    headers: headers({"Content-Type": "application/json"})});
  if (r.status === 401) return askToken(true);
  if (r.status === 403) return location.reload(); // the daemon restarted: a new CSRF token
  if (!r.ok) alert(action + ": " + (await r.text()));
  tick();
}

function button(label, onclick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.addEventListener("click", onclick);
  return b;
}

function row(tbody, d) {
  const tr = tbody.insertRow();
  const name = cell(tr, d.id);
  name.append(document.createElement("br"), small(d.file));
  cell(tr, d.status, d.status);
  cell(tr, d.turns + (d.next ? " → " + d.next : ""));
  cell(tr, (d.round || "") + (d.max_rounds ? "/" + d.max_rounds : ""));
  if (d.running) {
    const now = cell(tr, d.running.agent + " writing turn " + d.running.turn + " (" + Math.round(d.running.elapsed_s) + "s) ");
    now.append(small(d.running.last_line));
  } else {
    cell(tr, d.waiting || d.error || d.reason || "");
  }
  cell(tr, "$" + (d.cost_usd || 0).toFixed(4));
  if (d.status === "open") {
    cell(tr, button("halt", () => {
      const reason = prompt("Halt " + d.id + ": why?", "halted from the web page");
      if (reason !== null) control("halt", {file: d.file, reason});
    }));
  } else if (["halted", "failed", "over-budget", "deadlocked"].includes(d.status)) {
    cell(tr, button("resume", () => control("resume", {file: d.file})));
  } else {
    cell(tr, "");
  }
}

async function tick() {
  try {
    const r = await fetch("api/debates", {headers: headers(), cache: "no-store"});
    if (r.status === 401) return askToken(sessionStorage.getItem(tokenKey) !== null);
    if (!r.ok) throw new Error("HTTP " + r.status);
    const j = await r.json();
    $("dir").textContent = j.dir;
    $("sum").textContent = j.debates.length + " debates, " + j.sessions_running + " sessions running";
    const tbody = document.createElement("tbody");
    tbody.id = "rows";
    j.debates.forEach((d) => row(tbody, d));
    $("rows").replaceWith(tbody);
  } catch (e) {
    $("sum").textContent = "daemon unreachable: " + e;
  }
}

function start() {
  tick();
  if (timer === null) timer = setInterval(tick, 2000);
}

start();
