// The sidestream web view: the compiled topology (GET /topology) drawn as
// SVG, and the live state (GET /ui/events, server-sent events read with
// fetch so that a bearer token can go in a header; polling of /ui/state
// when streaming fails) written into it. Every value from the server goes
// into the page as text (textContent), never as markup.
//
// With api.auth: bearer the page asks for a token. It lives in this
// script's memory only: never in the URL, a cookie or storage, so a
// reload forgets it.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtInt(n) { return Math.round(n || 0).toString(); }
function fmtRate(n) {
  n = n || 0;
  if (n === 0) return "0";
  return n >= 100 ? Math.round(n).toString() : n.toFixed(1);
}
function fmtTime(ms) { return ms ? new Date(ms).toISOString().replace(".000Z", "Z") : "-"; }
function fmtAge(iso) {
  if (!iso) return "-";
  const s = (Date.now() - Date.parse(iso)) / 1000;
  return s < 0 ? "now" : s < 60 ? s.toFixed(1) + " s ago" : Math.round(s / 60) + " min ago";
}
function fmtDur(ms) {
  if (ms === undefined || ms === null) return "-";
  const s = ms / 1000;
  if (Math.abs(s) < 120) return s.toFixed(1) + " s";
  if (Math.abs(s) < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}

// ---- graph ------------------------------------------------------------

const graph = { nodes: [], edges: [], nodeEls: {}, edgeEls: [] };

// counterOfEdge says which counter's rate an edge shows.
function counterOfEdge(e) {
  if (e.late) return "late/" + e.late;
  if (e.from.startsWith("input:")) return "consumed/" + e.from.slice(6);
  // The default edge shares its route's counter with the predicate edge:
  // only the latter shows the rate.
  if (e.to.startsWith("route:")) return e.label === "no match" ? null : "route/" + e.to.slice(6);
  if (e.from.startsWith("route:") && e.to.startsWith("topic:")) return "route/" + e.from.slice(6);
  if (e.to === "dirty") return "dirty_stage/" + e.label;
  if (e.from === "dirty") return "dirty";
  if (e.to === "drop") return "dropped";
  if (e.to.startsWith("late:")) return "late/" + e.to.slice(5);
  if (e.from.startsWith("late:")) return "late/" + e.from.slice(5);
  return null;
}

function counterOfNode(n) {
  if (n.id.startsWith("input:")) return "consumed/" + n.id.slice(6);
  if (n.id.startsWith("route:")) return "route/" + n.id.slice(6);
  if (n.id === "dirty") return "dirty";
  if (n.id === "drop") return "dropped";
  if (n.id.startsWith("late:")) return "late/" + n.id.slice(5);
  return null;
}

// measure is the size of text as the graph draws it with class cls.
function measure(svg, text, cls) {
  const t = sv("text", { class: cls || "", x: 0, y: 0 }, text);
  svg.append(t);
  const b = t.getBBox();
  t.remove();
  return { w: b.width, h: b.height };
}

// fit shortens text with an ellipsis until it is at most w wide.
function fit(svg, text, w, cls) {
  if (measure(svg, text, cls).w <= w) return text;
  let n = text.length;
  while (n > 1 && measure(svg, text.slice(0, n - 1) + "…", cls).w > w) n--;
  return text.slice(0, n - 1) + "…";
}

function intersects(a, b) {
  return Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0;
}
function overlapArea(a, b) {
  return Math.max(0, Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0)) * Math.max(0, Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0));
}

// RATE_ROOM is the widest rate an edge label grows by: its box is placed
// with room for it, so a label that grows never runs into another.
const RATE_ROOM = "  000000/s";

// placeLabels puts each edge's label on its curve where its box meets no
// node and no label placed before it: the middle of the curve first, then
// along it, then above and below it; failing all, where it overlaps
// least. Labels are placed widest first.
function placeLabels(svg, items, nodeBoxes) {
  const placed = [];
  const order = items.slice().sort((a, b) => b.size.w - a.size.w);
  for (const it of order) {
    const { c, size } = it;
    const bez = (u, p0, p1, p2, p3) => (1 - u) ** 3 * p0 + 3 * (1 - u) ** 2 * u * p1 + 3 * (1 - u) * u * u * p2 + u ** 3 * p3;
    let best = null;
    const tries = [];
    for (const dy of [0, -13, 13, -26, 26, -39, 39]) {
      for (const u of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.12, 0.88]) tries.push([u, dy]);
    }
    for (const [u, dy] of tries) {
      const x = bez(u, c.x1, c.x1 + c.dx, c.x2 - c.dx, c.x2), y = bez(u, c.y1, c.y1, c.y2, c.y2) - 4 + dy;
      const box = { x0: x - size.w / 2 - 2, x1: x + size.w / 2 + 2, y0: y - size.h + 2, y1: y + 3 };
      let cost = 0;
      for (const o of placed) cost += overlapArea(box, o) * 4;
      for (const o of nodeBoxes) cost += overlapArea(box, o);
      cost += Math.abs(dy) * 0.01 + Math.abs(u - 0.5) * 0.01; // prefer on the curve, mid-way
      if (!best || cost < best.cost) best = { x, y, box, cost };
      if (cost < 1) break;
    }
    placed.push(best.box);
    it.t.setAttribute("x", best.x.toFixed(1));
    it.t.setAttribute("y", best.y.toFixed(1));
  }
}

function buildGraph(desc, routes) {
  const nodes = desc.nodes.map((n) => ({ ...n }));
  const edges = desc.edges.map((e) => ({ ...e }));
  // A late route: /topology draws it as an edge from the window route to
  // the late topic; an older router's graph lacks it, so it is drawn here
  // from the window route through a late node to the topic.
  for (const r of routes) {
    if (r.kind !== "late") continue;
    const drawn = edges.find((e) => e.from === "route:" + r.window && e.to === "topic:" + r.topic);
    if (drawn) { drawn.late = r.window; continue; }
    nodes.push({ id: "late:" + r.window, kind: "late", label: "late\n" + r.window });
    nodes.push({ id: "topic:" + r.topic, kind: "topic", label: r.topic });
    edges.push({ from: "route:" + r.window, to: "late:" + r.window, label: "too late" });
    edges.push({ from: "late:" + r.window, to: "topic:" + r.topic, label: "" });
  }
  // Layers: the longest path from an input.
  const layer = {};
  for (const n of nodes) layer[n.id] = 0;
  for (let i = 0; i < nodes.length; i++) {
    let changed = false;
    for (const e of edges) {
      if (layer[e.to] < layer[e.from] + 1) { layer[e.to] = layer[e.from] + 1; changed = true; }
    }
    if (!changed) break;
  }
  const cols = [];
  for (const n of nodes) (cols[layer[n.id]] = cols[layer[n.id]] || []).push(n);
  const svg = $("graph");
  svg.replaceChildren();
  // The gap between columns holds the labels of the edges that cross it:
  // as wide as the widest of them with its rate.
  const sizes = edges.map((e) => measure(svg, (e.label ? e.label : "") + (counterOfEdge(e) || e.to.startsWith("topic:") ? RATE_ROOM : ""), "edge-label"));
  let widest = 0;
  edges.forEach((e, i) => { if (layer[e.to] - layer[e.from] === 1) widest = Math.max(widest, sizes[i].w); });
  const W = 165, GAP = Math.max(62, Math.ceil(widest) + 16), VGAP = 26, LINE = 15;
  const heights = {};
  for (const n of nodes) heights[n.id] = 14 + Math.min(n.label.split("\n").length, 4) * LINE + LINE;
  let maxH = 0;
  const colH = cols.map((c) => c.reduce((a, n) => a + heights[n.id] + VGAP, 0));
  for (const h of colH) maxH = Math.max(maxH, h);
  const pos = {};
  cols.forEach((c, i) => {
    let y = 10 + (maxH - colH[i]) / 2;
    for (const n of c) { pos[n.id] = { x: 10 + i * (W + GAP), y, w: W, h: heights[n.id] }; y += heights[n.id] + VGAP; }
  });
  // Scaled to the page's width, never wider than drawn.
  const width = 20 + cols.length * (W + GAP) - GAP, height = maxH + 20;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", "100%");
  svg.style.maxWidth = width + "px";
  const eg = sv("g"), ng = sv("g");
  svg.append(eg, ng);
  graph.edgeEls = [];
  const labels = [];
  edges.forEach((e, i) => {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) return;
    const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2;
    const dx = Math.max((x2 - x1) / 2, 30);
    let cls = "edge";
    if (e.to === "dirty" || e.from === "dirty") cls += " to-dirty";
    if (e.late || e.to.startsWith("late:") || e.from.startsWith("late:")) cls += " to-late";
    const g = sv("g", { class: cls, "data-from": e.from, "data-to": e.to });
    g.append(sv("path", { d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}` }));
    const t = sv("text", { x: 0, y: 0, "text-anchor": "middle", class: "edge-label" }, e.label);
    g.append(t);
    eg.append(g);
    labels.push({ t, size: sizes[i], c: { x1, y1, x2, y2, dx } });
    graph.edgeEls.push({ e, g, t, counter: counterOfEdge(e) });
  });
  const nodeBoxes = Object.values(pos).map((p) => ({ x0: p.x, x1: p.x + p.w, y0: p.y, y1: p.y + p.h }));
  placeLabels(svg, labels, nodeBoxes);
  graph.nodeEls = {};
  for (const n of nodes) {
    const p = pos[n.id];
    const g = sv("g", { class: "node " + n.kind, "data-id": n.id, transform: `translate(${p.x},${p.y})` });
    g.append(sv("rect", { width: p.w, height: p.h }));
    const lines = n.label.split("\n").slice(0, 4);
    lines.forEach((l, i) => {
      // Each line fits its box: a longer one is cut, in full on hover.
      const s = fit(svg, l, p.w - 16, i === 0 ? "node-title" : "");
      const t = sv("text", { x: 8, y: 17 + i * LINE, class: i === 0 ? "node-title" : "" }, s);
      if (l !== s) t.append(sv("title", {}, l));
      g.append(t);
    });
    const count = sv("text", { x: 8, y: 17 + lines.length * LINE, class: "count" }, "");
    g.append(count);
    ng.append(g);
    graph.nodeEls[n.id] = { n, count, counter: counterOfNode(n) };
  }
  graph.nodes = nodes;
}

// topicCounter is the counter of what a route wrote to its topic: the
// one place the view decides it (the graph's topic nodes and edges, the
// routes' charts). A window route's topic holds its results, not the
// records it took; a side route's its own counter.
function topicCounter(r, counters) {
  if (r.topic && ("written/" + r.topic) in counters) return "written/" + r.topic;
  return r.counter;
}

function updateGraph(v) {
  // A route's topic shows the records written to it, not the records the
  // route took (a window route's results, an assembly route's assemblies).
  for (const x of graph.edgeEls) {
    if (x.e.from.startsWith("route:") && x.e.to.startsWith("topic:")) x.counter = "written/" + x.e.to.slice(6);
    if (!x.counter) continue;
    const r = v.rates[x.counter] || 0;
    const label = (x.e.label ? x.e.label + "  " : "") + fmtRate(r) + "/s";
    x.t.textContent = label;
    x.g.classList.toggle("active", r > 0);
  }
  // Topics show what their route wrote.
  for (const r of v.routes) {
    const n = graph.nodeEls["topic:" + r.topic];
    if (n) n.counter = topicCounter(r, v.counters);
  }
  for (const x of Object.values(graph.nodeEls)) {
    if (!x.counter) continue;
    x.count.textContent = fmtInt(v.counters[x.counter]) + " records";
  }
}

// ---- tables -----------------------------------------------------------

function updateRoutes(v) {
  const tb = $("routes").tBodies[0];
  const rows = [];
  for (const r of v.routes) {
    const tr = el("tr", { "data-route": r.name, class: "kind-" + r.kind });
    tr.append(el("td", {}, r.name), el("td", {}, r.kind), el("td", {}, r.topic),
      el("td", { class: "num total", "data-value": fmtInt(v.counters[r.counter]) }, fmtInt(v.counters[r.counter])),
      el("td", { class: "num rate" }, fmtRate(v.rates[r.counter])));
    rows.push(tr);
  }
  tb.replaceChildren(...rows);

  const tt = $("totals").tBodies[0];
  const keys = Object.keys(v.counters).filter((k) => k.startsWith("consumed/") || k.startsWith("redriven/") || k.startsWith("results/") || ["dropped", "commits", "aborts"].includes(k)).sort();
  tt.replaceChildren(...keys.map((k) => {
    const tr = el("tr", { "data-counter": k });
    tr.append(el("td", {}, k), el("td", { class: "num" }, fmtInt(v.counters[k])), el("td", { class: "num" }, fmtRate(v.rates[k]) + "/s"));
    return tr;
  }));

  const rb = $("reasons").tBodies[0];
  const rk = Object.keys(v.counters).filter((k) => k.startsWith("dirty_reason/")).sort((a, b) => v.counters[b] - v.counters[a] || (a < b ? -1 : 1));
  let zero = 0;
  rb.replaceChildren(...rk.map((k) => {
    const tr = el("tr", { "data-reason": k.slice(13) });
    tr.append(el("td", {}, k.slice(13)), el("td", { class: "num" }, fmtInt(v.counters[k])), el("td", { class: "num" }, fmtRate(v.rates[k])));
    // A reason no record had is folded away unless "show all".
    if (!v.counters[k]) { zero++; tr.classList.add("zero"); tr.hidden = !showAllReasons; }
    return tr;
  }));
  if (rk.length === zero) {
    const tr = el("tr", { class: "none" });
    tr.append(el("td", { colspan: "3", class: "empty" }, "no dirty records"));
    tr.hidden = showAllReasons;
    rb.prepend(tr);
  }
  const tg = $("reasons-toggle");
  tg.hidden = zero === 0;
  tg.textContent = showAllReasons ? "hide the reasons at 0" : `show all (${zero} more at 0)`;
}

let showAllReasons = false;
$("reasons-toggle").addEventListener("click", () => {
  showAllReasons = !showAllReasons;
  if (last) updateRoutes(last);
});

function updateTasks(v) {
  const tb = $("tasks").tBodies[0];
  if (!v.tasks.length) {
    const tr = el("tr");
    tr.append(el("td", { colspan: "10", class: "empty" }, "no assigned partitions"));
    tb.replaceChildren(tr);
    return;
  }
  tb.replaceChildren(...v.tasks.map((t) => {
    const tr = el("tr", { "data-task": t.topic + "/" + t.partition });
    tr.append(el("td", {}, t.topic), el("td", { class: "num" }, String(t.partition)),
      el("td", { class: "num" }, off(t.position)), el("td", { class: "num" }, off(t.committed)),
      el("td", { class: "num" }, off(t.lag)), el("td", {}, fmtAge(t.last_commit)),
      el("td", {}, t.route || ""), el("td", {}, t.watermark !== undefined ? fmtTime(t.watermark) : ""),
      el("td", { class: "num" }, t.watermark_lag_ms !== undefined ? fmtDur(t.watermark_lag_ms) : ""),
      el("td", { class: "num" }, t.route ? String(t.open_windows || 0) : ""));
    return tr;
  }));
}

// off shows an offset or lag; -1 means not known yet.
function off(n) { return n === undefined || n < 0 ? "-" : String(n); }

function sampleCard(s) {
  const d = el("div", { class: "sample " + s.kind, "data-seq": String(s.seq) });
  const head = el("div", { class: "head" });
  head.append(el("span", { class: "reason" }, s.reason || s.kind), document.createTextNode(
    `  ${s.topic}[${s.partition}]@${s.offset}  key=${s.key}  ${fmtTime(s.committed)}`));
  d.append(head);
  const ul = el("ul");
  for (const l of s.lines || []) ul.append(el("li", {}, l));
  d.append(ul);
  const v = s.value || {};
  let note = `${v.kind}, ${v.bytes} bytes` + (v.truncated ? ", truncated" : "") + (s.redacted ? ", fields redacted" : "");
  d.append(el("div", { class: "head" }, "value (" + note + ")"));
  if (v.kind === "withheld") d.append(el("div", { class: "note" }, "not JSON, so it cannot be redacted: withheld (api.samples: redacted)"));
  else if (v.kind !== "empty") d.append(el("pre", {}, v.text));
  return d;
}

const shown = { dirty: -1, late: -1, incomplete: -1, overflow: -1 };
function updateSamples(v) {
  if (v.samples_mode === "off") {
    for (const kind of Object.keys(shown)) $("samples-" + kind).replaceChildren(el("p", { class: "empty" }, "samples are off (api.samples: off)"));
    return;
  }
  for (const kind of ["dirty", "late", "incomplete", "overflow"]) {
    const list = v.samples[kind] || [];
    const last = list.length ? list[list.length - 1].seq : -1;
    if (last === shown[kind]) continue;
    shown[kind] = last;
    const box = $("samples-" + kind);
    if (!list.length) { box.replaceChildren(el("p", { class: "empty" }, "none yet")); continue; }
    box.replaceChildren(...list.slice().reverse().map(sampleCard));
  }
}

// ---- charts: rates over the last minutes (GET /ui/history) -------------

// chartsOf lists the charts: one per route (what it wrote), per input
// (what was consumed) and for each side route (dirty, late, ...).
function chartsOf(v) {
  const out = [];
  for (const t of Object.keys(v.counters).filter((k) => k.startsWith("consumed/")).sort()) {
    if (graph.nodeEls["input:" + t.slice(9)]) out.push({ id: t, title: "in: " + t.slice(9), kind: "input", counter: t });
  }
  for (const r of v.routes) out.push({ id: "route:" + r.name, title: r.name, kind: r.kind, counter: topicCounter(r, v.counters) });
  return out;
}

function fmtSpan(ms) {
  const s = Math.round(ms / 1000);
  return s < 120 ? s + " s" : Math.round(s / 60) + " min";
}

// sparkline draws a series as an inline SVG: its area and its line,
// scaled to its own maximum; no text inside (the numbers are HTML).
function sparkline(vals, times, span, now, interval) {
  const W = 240, H = 48;
  const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", class: "spark", role: "img" });
  const top = Math.max(...vals, 0);
  const x = (t) => Math.max(0, W - ((now - t) / span) * W);
  const y = (r) => H - 2 - (top > 0 ? (r / top) * (H - 4) : 0);
  if (vals.length) {
    // Each rate holds over its interval: a step from its start to its end.
    const pts = vals.flatMap((r, i) => [`${x(times[i] - interval).toFixed(1)},${y(r).toFixed(1)}`, `${x(times[i]).toFixed(1)},${y(r).toFixed(1)}`]);
    svg.append(sv("path", { class: "area", d: `M${x(times[0] - interval).toFixed(1)},${H} L${pts.join(" L")} L${W},${H} Z` }));
    svg.append(sv("path", { class: "line", d: "M" + pts.join(" L") }));
  }
  return svg;
}

function updateCharts(h) {
  const v = last;
  if (!v) return;
  const box = $("charts");
  const times = h.times || [];
  // The axis spans the history held (at most its span): a young process
  // fills the chart instead of a sliver at its right end.
  const interval = h.interval_ms || 5000;
  const now = times.length ? times[times.length - 1] : Date.now();
  const span = times.length ? now - times[0] + interval : interval;
  $("charts-span").textContent = times.length ? "last " + fmtSpan(span) + ", every " + fmtSpan(h.interval_ms) : "collecting (a point every " + fmtSpan(interval) + ")";
  box.replaceChildren(...chartsOf(v).map((c) => {
    const vals = (h.rates || {})[c.counter] || times.map(() => 0);
    const d = el("div", { class: "chart kind-" + c.kind, "data-chart": c.id, "data-counter": c.counter });
    const head = el("div", { class: "chart-head" });
    head.append(el("span", { class: "chart-title" }, c.title),
      el("span", { class: "chart-now" }, fmtRate(vals.length ? vals[vals.length - 1] : 0) + "/s"));
    d.append(head, sparkline(vals, times, span, now, interval));
    const foot = el("div", { class: "chart-foot" });
    foot.append(el("span", {}, "-" + fmtSpan(span)), el("span", {}, "max " + fmtRate(Math.max(0, ...vals)) + "/s"), el("span", {}, "now"));
    d.append(foot);
    return d;
  }));
}

async function pollHistory() {
  try {
    const r = await api("/ui/history");
    if (r.ok) updateCharts(await r.json());
  } catch (e) {
    if (e instanceof Unauthorized) return;
  }
  setTimeout(pollHistory, 5000);
}

// ---- cluster: every instance of the application (GET /ui/cluster) ------

function sumRates(rates, prefix) {
  let n = 0;
  for (const [k, r] of Object.entries(rates || {})) if (k === prefix || k.startsWith(prefix + "/")) n += r;
  return n;
}

function partsOf(in_) {
  // Its input partitions as it reports them, else as the group assigned
  // them (an instance that did not answer).
  const by = {};
  if (in_.status) {
    for (const p of in_.status.partitions) if (!p.route) (by[p.topic] = by[p.topic] || []).push(p.partition);
  } else {
    for (const [t, ps] of Object.entries(in_.assigned || {})) by[t] = ps.slice();
  }
  return Object.keys(by).sort().map((t) => t + ": " + by[t].sort((a, b) => a - b).join(",")).join("  ") || "none";
}

function updateCluster(c) {
  const inputs = Object.keys(graph.nodeEls).filter((k) => k.startsWith("input:")).map((k) => "consumed/" + k.slice(6));
  const consumed = (rates) => inputs.reduce((a, k) => a + ((rates || {})[k] || 0), 0);
  $("cluster-note").textContent = c.error ? c.error : `${c.instances.length} instance${c.instances.length === 1 ? "" : "s"} in the group`;
  $("cluster-note").className = c.error ? "bad" : "";
  $("cluster").tBodies[0].replaceChildren(...c.instances.map((in_) => {
    const st = in_.status;
    const tr = el("tr", { "data-instance": in_.instance, class: in_.reachable ? "reachable" : "unreachable" });
    const name = el("td", {}, in_.instance || "(this instance)");
    if (in_.self) name.append(el("span", { class: "pill self" }, "this page"));
    const status = in_.reachable
      ? el("td", { class: "status" }, st && st.ready === false ? "not ready: " + st.reason : "ok")
      : el("td", { class: "status" }, "unreachable: " + in_.error);
    tr.append(name, el("td", {}, in_.url || in_.host || ""), status, el("td", { class: "parts" }, partsOf(in_)),
      el("td", { class: "num lag" }, st ? String(st.lag) : "-"),
      el("td", { class: "num in" }, st ? fmtRate(consumed(st.rates)) : "-"),
      el("td", { class: "num" }, st ? fmtRate(sumRates(st.rates, "route")) : "-"),
      el("td", { class: "num" }, st ? fmtRate(sumRates(st.rates, "dirty")) : "-"),
      el("td", { class: "num" }, st ? fmtRate(sumRates(st.rates, "late")) : "-"));
    return tr;
  }));
}

async function pollCluster() {
  try {
    const r = await api("/ui/cluster");
    if (r.ok) updateCluster(await r.json());
  } catch (e) {
    if (e instanceof Unauthorized) return;
  }
  setTimeout(pollCluster, 3000);
}

// ---- auth ---------------------------------------------------------------

let token = "";

// Unauthorized is what api() throws on a 401, with the server's answer.
class Unauthorized extends Error {
  constructor(body) { super("unauthorized"); this.body = body || {}; }
}

// api fetches a path of this router with the token, if any.
async function api(path, opts) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { cache: "no-store", ...(opts || {}), headers });
  if (r.status === 401) throw new Unauthorized(await r.json().catch(() => ({})));
  return r;
}

// askLogin shows how to get in, instead of the view.
function askLogin(body, failed) {
  const why = $("login-why");
  if (body.auth === "mtls") {
    why.textContent = "This router's API needs a client certificate (api.auth: mtls). Install one signed by the CA of api.tls.client_ca_file in this browser, then reload the page.";
    $("login-form").hidden = true;
  } else {
    why.textContent = "This router's API needs a token (api.auth: bearer). Paste one of the tokens of api.token_file or SIDESTREAM_API_TOKENS; the page keeps it in memory only, never in the address or storage.";
    $("login-form").hidden = false;
  }
  $("login-err").textContent = failed ? "That token was refused." : "";
  $("login").hidden = false;
  $("view").hidden = true;
  setConn("sign-in needed", false);
  if (!$("login-form").hidden) $("token").focus();
}

function login() {
  const t = $("token").value.trim();
  $("token").value = "";
  if (!t) return;
  token = t;
  start(true);
}

$("login-go").addEventListener("click", login);
$("token").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); login(); } });

// ---- state ------------------------------------------------------------

let drawn = false;
let last = null; // the latest state
async function apply(v) {
  last = v;
  if (!drawn) {
    const desc = await (await api("/topology")).json();
    buildGraph(desc, v.routes);
    drawn = true;
    pollHistory();
    pollCluster();
  }
  $("app").textContent = v.application_id;
  $("guarantee").textContent = v.guarantee;
  const ready = $("ready");
  if (v.ready === undefined || v.ready === null) {
    ready.textContent = v.reason || "";
    ready.className = "pill";
  } else {
    ready.textContent = v.ready ? "ready" : "not ready: " + v.reason;
    ready.className = "pill " + (v.ready ? "ok" : "bad");
  }
  $("updated").textContent = "updated " + fmtTime(v.now);
  updateGraph(v);
  updateRoutes(v);
  updateTasks(v);
  updateSamples(v);
}

function setConn(text, ok) {
  const c = $("conn");
  c.textContent = text;
  c.className = "pill " + (ok ? "ok" : "bad");
}

function poll() {
  setConn("polling", true);
  const tick = async () => {
    try {
      const r = await api("/ui/state");
      await apply(await r.json());
      setConn("polling", true);
    } catch (e) {
      if (e instanceof Unauthorized) return askLogin(e.body, true);
      setConn("disconnected", false);
    }
    setTimeout(tick, 1000);
  };
  tick();
}

// stream reads /ui/events with fetch: EventSource cannot send the
// Authorization header. Frames are "event: state\ndata: JSON\n\n".
async function stream() {
  if (!window.ReadableStream || !window.TextDecoder) return poll();
  let opened = false;
  for (;;) {
    try {
      const r = await api("/ui/events");
      if (!r.ok || !r.body) throw new Error("HTTP " + r.status);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "message", data = "";
          for (const line of frame.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (event !== "state" || !data) continue;
          opened = true;
          setConn("live", true);
          await apply(JSON.parse(data)).catch((e) => setConn("error: " + e.message, false));
        }
      }
      setConn("reconnecting…", false);
    } catch (e) {
      if (e instanceof Unauthorized) return askLogin(e.body, true);
      if (!opened) return poll();
      setConn("reconnecting…", false);
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
}

// start shows the view when the API lets this page in, else the login.
async function start(afterLogin) {
  try {
    const r = await api("/ui/state");
    $("login").hidden = true;
    $("view").hidden = false;
    await apply(await r.json());
    stream();
  } catch (e) {
    if (e instanceof Unauthorized) return askLogin(e.body, afterLogin);
    setConn("disconnected", false);
    setTimeout(() => start(afterLogin), 1000);
  }
}

start(false);
