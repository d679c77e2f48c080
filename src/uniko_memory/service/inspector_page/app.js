// The memory inspector page. Every piece of memory content goes into the DOM as text
// (textContent, SVG text nodes), never as markup: stored text cannot become HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="inspector-token"]').content;
const SVG = "http://www.w3.org/2000/svg";
const TIER_ORDER = ["message", "observation", "fact", "topic", "episode", "entity", "participant",
  "session", "chunk", "summary", "artifact", "procedure"];
const state = { agent: null, session: null, readOnly: false };

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function status(text, error) {
  const s = document.getElementById("status");
  s.textContent = text || "";
  s.className = error ? "error" : "";
}
function cut(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
function agentPath(suffix) { return "/api/agents/" + encodeURIComponent(state.agent) + suffix; }

async function getJSON(url) {
  const r = await fetch(url, { headers: { Accept: "application/json", "X-Inspector-Token": TOKEN } });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
async function postJSON(url, payload) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Inspector-Token": TOKEN },
    body: JSON.stringify(payload),
  });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// ------------------------------------------------------------------ agents, sessions, turns
async function loadOverview() {
  const data = await getJSON("/api/overview");
  state.readOnly = data.read_only;
  document.getElementById("store-path").textContent = data.path;
  const mode = document.getElementById("mode");
  mode.textContent = data.read_only ? "read-only (another process writes this store)" : "read-write";
  mode.className = data.read_only ? "ro" : "";
  const body = document.querySelector("#agents tbody");
  clear(body);
  for (const a of data.agents) {
    const tr = el("tr", null, "agent");
    tr.dataset.agent = a.agent;
    tr.appendChild(el("td", a.agent, "agent-name"));
    tr.appendChild(el("td", a.sessions));
    tr.appendChild(el("td", Object.entries(a.tiers).map(([t, n]) => t + " " + n).join(", "), "tiers"));
    tr.addEventListener("click", () => selectAgent(a.agent));
    body.appendChild(tr);
  }
  if (!state.agent && data.agents.length) await selectAgent(data.agents[0].agent);
  document.body.dataset.ready = "1";
}

async function selectAgent(agent) {
  state.agent = agent;
  state.session = null;
  for (const tr of document.querySelectorAll("#agents tr.agent")) tr.classList.toggle("active", tr.dataset.agent === agent);
  document.getElementById("sessions-agent").textContent = "of " + agent;
  const data = await getJSON(agentPath("/sessions"));
  const list = document.getElementById("sessions");
  clear(list);
  for (const s of data.sessions) {
    const li = el("li", null, "session");
    li.dataset.session = s.session;
    li.appendChild(el("span", s.session, "session-id"));
    li.appendChild(el("span", " (" + s.messages + " turns" + (s.closed ? ", closed" : "") + ")", "hint"));
    li.addEventListener("click", () => selectSession(s.session));
    list.appendChild(li);
  }
  clear(document.getElementById("messages"));
  document.getElementById("forget-session").disabled = true;
  await loadNodes();
}

async function selectSession(session) {
  state.session = session;
  for (const li of document.querySelectorAll("#sessions li")) li.classList.toggle("active", li.dataset.session === session);
  document.getElementById("messages-session").textContent = "of " + session;
  document.getElementById("forget-session").disabled = state.readOnly;
  const data = await getJSON(agentPath("/messages?session=" + encodeURIComponent(session)));
  const list = document.getElementById("messages");
  clear(list);
  for (const m of data.messages) {
    const li = el("li", null, "message");
    li.dataset.node = m.id;
    li.dataset.turn = m.turn_id;
    li.appendChild(el("span", m.sender, "sender"));
    li.appendChild(el("span", ": "));
    li.appendChild(el("span", m.content, "content"));
    if (m.timestamp) li.appendChild(el("span", m.timestamp.slice(0, 16).replace("T", " "), "when"));
    const forget = el("button", "forget", "forget");
    forget.type = "button";
    forget.disabled = state.readOnly;
    forget.addEventListener("click", (ev) => { ev.stopPropagation(); forgetTurn(m); });
    li.appendChild(forget);
    li.addEventListener("click", () => drawGraph(m.id));
    list.appendChild(li);
  }
}

async function loadNodes() {
  const tier = document.getElementById("tier-pick").value || "message";
  const data = await getJSON(agentPath("/nodes?tier=" + encodeURIComponent(tier)));
  const list = document.getElementById("nodes");
  clear(list);
  for (const n of data.nodes) {
    const li = el("li", n.label, "node");
    li.dataset.node = n.id;
    li.addEventListener("click", () => drawGraph(n.id));
    list.appendChild(li);
  }
}

// ------------------------------------------------------------------ forget
async function forgetTurn(m) {
  const ok = window.confirm("Forget this turn of " + state.session + "?\n\n" + cut(m.sender + ": " + m.content, 200) +
    "\n\nIt is redacted with everything derived only from it.");
  if (!ok) { status("forget cancelled"); return; }
  await runForget({ session: state.session, turn_id: m.turn_id, confirm: true });
}
async function forgetSession() {
  if (!state.session) return;
  const ok = window.confirm("Forget every turn of session " + state.session + "?\n\nThey are redacted with everything derived only from them.");
  if (!ok) { status("forget cancelled"); return; }
  await runForget({ session: state.session, confirm: true });
}
async function runForget(payload) {
  try {
    const out = await postJSON(agentPath("/forget"), payload);
    status(out.text);
    const session = state.session;
    await loadOverview();
    if (session) await selectSession(session);
  } catch (e) { status("forget failed: " + e.message, true); }
}

// ------------------------------------------------------------------ provenance graph
async function drawGraph(nodeId) {
  let data;
  try { data = await getJSON(agentPath("/graph?node=" + encodeURIComponent(nodeId))); }
  catch (e) { status("graph: " + e.message, true); return; }
  const box = document.getElementById("graph");
  clear(box);
  document.getElementById("graph-center").textContent = "of " + nodeId + (data.truncated ? " (truncated)" : "");
  const columns = new Map();
  for (const n of data.nodes) {
    if (!columns.has(n.tier)) columns.set(n.tier, []);
    columns.get(n.tier).push(n);
  }
  const tiers = [...columns.keys()].sort((a, b) => rank(a) - rank(b));
  const W = 160, H = 34, GAPX = 56, GAPY = 10, PAD = 20;
  const rows = Math.max(...tiers.map((t) => columns.get(t).length));
  const width = PAD * 2 + tiers.length * W + (tiers.length - 1) * GAPX;
  const height = PAD * 2 + 16 + rows * (H + GAPY);
  const root = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img", "aria-label": "provenance graph" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#94a3b8" }));
  defs.appendChild(marker);
  root.appendChild(defs);
  const pos = new Map();
  tiers.forEach((tier, i) => {
    const x = PAD + i * (W + GAPX);
    const head = svg("text", { x: x, y: PAD, "font-weight": "bold", "font-size": 11 });
    head.textContent = tier;
    root.appendChild(head);
    columns.get(tier).forEach((n, j) => pos.set(n.id, { x: x, y: PAD + 12 + j * (H + GAPY), n: n }));
  });
  const edgeLayer = svg("g");
  root.appendChild(edgeLayer);
  for (const e of data.edges) {
    const a = pos.get(e.src), b = pos.get(e.dst);
    if (!a || !b) continue;
    const left = a.x <= b.x;
    const x1 = left ? a.x + W : a.x, x2 = left ? b.x : b.x + W;
    const y1 = a.y + H / 2, y2 = b.y + H / 2;
    const mid = (x1 + x2) / 2;
    const path = svg("path", { d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`, class: "gedge", "marker-end": "url(#arrow)" });
    path.dataset.type = e.type;
    const t = svg("title"); t.textContent = e.type + ": " + e.src + " \u2192 " + e.dst; path.appendChild(t);
    edgeLayer.appendChild(path);
    if (a.x !== b.x) {
      const lab = svg("text", { x: mid, y: (y1 + y2) / 2 - 2, class: "gedge-label", "text-anchor": "middle" });
      lab.textContent = e.type;
      edgeLayer.appendChild(lab);
    }
  }
  for (const { x, y, n } of pos.values()) {
    const g = svg("g", { class: "gnode tier-" + n.tier + (n.id === data.center ? " center" : ""), transform: `translate(${x},${y})` });
    g.dataset.node = n.id;
    g.dataset.tier = n.tier;
    g.appendChild(svg("rect", { width: W, height: H }));
    const line1 = svg("text", { x: 5, y: 14 }); line1.textContent = cut(n.label, 30);
    const line2 = svg("text", { x: 5, y: 27, fill: "#475569" }); line2.textContent = cut(n.label.slice(29), 30);
    const title = svg("title"); title.textContent = n.tier + " " + n.id + "\n" + n.label;
    g.appendChild(line1); g.appendChild(line2); g.appendChild(title);
    g.addEventListener("click", () => drawGraph(n.id));
    root.appendChild(g);
  }
  box.appendChild(root);
  const legend = document.getElementById("graph-legend");
  clear(legend);
  legend.className = "legend";
  legend.appendChild(el("span", data.nodes.length + " nodes, " + data.edges.length + " edges; click a node to centre it"));
}
function rank(tier) { const i = TIER_ORDER.indexOf(tier); return i < 0 ? 99 : i; }

// ------------------------------------------------------------------ recall and its trace
async function runRecall(ev) {
  ev.preventDefault();
  if (!state.agent) { status("no agent", true); return; }
  const question = document.getElementById("recall-q").value;
  const budget = parseInt(document.getElementById("recall-budget").value, 10);
  status("recalling\u2026");
  let r;
  try { r = await postJSON(agentPath("/recall"), { question: question, budget: Number.isFinite(budget) ? budget : null }); }
  catch (e) { status("recall failed: " + e.message, true); return; }
  status("recalled " + r.items.length + " items");
  document.getElementById("bundle-tokens").textContent =
    r.total_tokens + " / " + r.token_budget + " tokens (" + r.token_counter + "), coverage " + r.coverage +
    ", exited after phase " + r.phase;
  document.getElementById("bundle").textContent = r.rendered || "(nothing recalled)";
  const items = document.querySelector("#items tbody");
  clear(items);
  r.items.forEach((it, i) => {
    const tr = el("tr", null, "item");
    tr.dataset.node = it.node_id;
    for (const v of [i + 1, it.kind, it.score, it.relative_score, it.fused, it.channels.join(" "), it.tokens, it.content])
      tr.appendChild(el("td", v));
    tr.addEventListener("click", () => drawGraph(it.node_id));
    items.appendChild(tr);
  });
  const t = r.trace;
  const intent = document.getElementById("trace-intent");
  clear(intent);
  if (t.intent) {
    const parts = [];
    for (const [k, v] of Object.entries(t.intent)) if (v && (!Array.isArray(v) || v.length)) parts.push(k + ": " + JSON.stringify(v));
    intent.appendChild(el("p", "intent \u2014 " + (parts.join("; ") || "none")));
  }
  const phases = document.querySelector("#trace-phases tbody");
  clear(phases);
  for (const [name, p] of Object.entries(t.phases || {})) {
    const tr = el("tr", null, "phase");
    const lists = p.lists ? Object.entries(p.lists).map(([k, v]) => k + " " + v).join(", ") : "";
    for (const v of [name, p.items, p.coverage === undefined ? "" : Number(p.coverage).toFixed(3), p.pool_tokens ?? "", lists])
      tr.appendChild(el("td", v));
    phases.appendChild(tr);
  }
  const channels = document.getElementById("trace-channels");
  clear(channels);
  for (const [name, entries] of Object.entries(t.channels || {})) {
    const div = el("div", null, "channel");
    div.dataset.channel = name;
    div.appendChild(el("h4", name + " (" + entries.length + " shown)"));
    const ol = el("ol");
    for (const e of entries) ol.appendChild(el("li", "#" + e.rank + " " + e.score + " \u2014 " + (r.labels[e.id] || e.id)));
    div.appendChild(ol);
    channels.appendChild(div);
  }
  const dropped = document.querySelector("#trace-dropped tbody");
  clear(dropped);
  for (const [id, why] of Object.entries(t.dropped || {})) {
    const tr = el("tr", null, "dropped");
    tr.appendChild(el("td", r.labels[id] || id));
    tr.appendChild(el("td", why));
    dropped.appendChild(tr);
  }
  document.getElementById("trace-degraded").textContent =
    (t.degraded && t.degraded.length ? "degraded: " + t.degraded.join("; ") + ". " : "") + "elapsed " + t.elapsed_ms + " ms";
}

// ------------------------------------------------------------------ start
document.addEventListener("DOMContentLoaded", () => {
  const pick = document.getElementById("tier-pick");
  for (const t of ["message", "observation", "fact", "topic", "episode", "entity", "chunk"]) pick.appendChild(el("option", t));
  pick.addEventListener("change", () => loadNodes().catch((e) => status(e.message, true)));
  document.getElementById("recall-form").addEventListener("submit", runRecall);
  document.getElementById("forget-session").addEventListener("click", forgetSession);
  loadOverview().catch((e) => status("could not load: " + e.message, true));
});
