// The web view in a real browser: Debian's headless chromium driven by
// playwright-core, against a running `router demo`. Checks that the page
// loads, shows every route of the topology (table and graph), that its
// counters increase while the demo runs, that a dirty sample shows its
// reason, and that the page asks nothing of another host. With UI_TOKEN
// (the demo runs with api.auth: bearer) it first checks that the page,
// without a token, says how to sign in, then signs in with the token,
// which must never reach the address bar or the browser's storage.
// Prints one JSON line; exits 1 on the first failed check.
//
//   UI_URL=http://127.0.0.1:PORT/ui/ UI_ROUTES=error,warn,main,dirty UI_TOKEN=... \
//   UI_SCREENSHOT=/tmp/ui.png CHROMIUM=/usr/bin/chromium node ui.test.mjs
import { chromium } from "playwright-core";
import { overlappingLabels } from "./labels.mjs";

const url = process.env.UI_URL;
const routes = (process.env.UI_ROUTES || "").split(",").filter(Boolean);
const shot = process.env.UI_SCREENSHOT;
const token = process.env.UI_TOKEN || "";
if (!url || routes.length === 0) {
  console.error("ui.test.mjs: set UI_URL and UI_ROUTES");
  process.exit(2);
}
const origin = new URL(url).origin;
const result = { url, routes, checks: [] };
const fail = (msg) => {
  result.error = msg;
  console.log(JSON.stringify(result));
  process.exit(1);
};
const pass = (name, detail) => result.checks.push(detail === undefined ? name : `${name}: ${detail}`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1100 } });
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  let signedIn = !token;
  // Before signing in, the browser logs the expected 401s.
  page.on("console", (m) => { if (m.type() === "error" && (signedIn || !m.text().includes("401"))) problems.push("console: " + m.text()); });
  page.on("request", (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith("data:")) problems.push("external request: " + r.url()); });

  const resp = await page.goto(url, { waitUntil: "load" });
  if (!resp || resp.status() !== 200) fail(`GET ${url}: ${resp && resp.status()}`);
  pass("page loads");
  if (token) {
    await page.waitForSelector("#login:not([hidden])", { timeout: 20000 }).catch(() => fail("without a token the page shows no sign-in"));
    const why = await page.textContent("#login-why");
    if (!/token/.test(why) || !/api\.auth: bearer/.test(why)) fail("the sign-in does not say how to log in: " + why);
    if (await page.$("#graph [data-id]")) fail("the graph is drawn without a token");
    const denied = await page.evaluate(async () => (await fetch("/ui/state")).status);
    if (denied !== 401) fail(`/ui/state without a token: ${denied}, want 401`);
    pass("without a token: sign-in shown", why.slice(0, 60));
    await page.fill("#token", "wrong-token-0123456789");
    await page.click("#login-go");
    await page.waitForFunction(() => document.querySelector("#login-err").textContent.includes("refused"), null, { timeout: 10000 }).catch(() => fail("a wrong token is not refused"));
    pass("a wrong token is refused");
    await page.fill("#token", token);
    await page.click("#login-go");
    signedIn = true;
    await page.waitForSelector("#view:not([hidden])", { timeout: 20000 }).catch(() => fail("signing in with the token did not open the view"));
    const stored = await page.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie + location.href);
    if (stored.includes(token)) fail("the token is kept outside memory: " + stored);
    pass("signed in with the token; not in the URL or storage");
  }
  await page.waitForSelector("#conn.ok", { timeout: 20000 }).catch(() => fail("the state stream never connected"));
  pass("live state", await page.textContent("#conn"));

  for (const r of routes) {
    await page.waitForSelector(`#routes tr[data-route="${r}"]`, { timeout: 10000 }).catch(() => fail(`route ${r} missing from the routes table`));
    const node = r === "dirty" ? `#graph [data-id="dirty"]` : `#graph [data-id="route:${r}"]`;
    if (!(await page.$(node))) fail(`route ${r} missing from the graph`);
  }
  pass("every route shown", routes.join(" "));

  const totals = () => page.$$eval("#routes tr[data-route] .total", (tds) => tds.reduce((a, td) => a + Number(td.dataset.value || 0), 0));
  const first = await totals();
  let later = first;
  for (let i = 0; i < 40 && later <= first; i++) {
    await page.waitForTimeout(250);
    later = await totals();
  }
  if (later <= first) fail(`route counters did not increase (${first} -> ${later})`);
  pass("counters increase", `${first} -> ${later}`);
  const rate = await page.$$eval("#graph .edge.active", (es) => es.length);
  if (rate === 0) fail("no edge shows a live rate");
  pass("edges with a live rate", String(rate));

  // No two labels of the graph overlap: every text element's box (getBBox,
  // in the SVG's coordinates through getCTM) against every other's, once
  // the edges carry their live rates (their longest labels).
  await page.waitForTimeout(1200);
  const overlaps = await page.evaluate(overlappingLabels, "#graph");
  if (overlaps.length) fail(`${overlaps.length} overlapping graph labels: ${overlaps.slice(0, 8).join("; ")}`);
  pass("no overlapping graph labels", String(await page.$$eval("#graph text", (ts) => ts.length)) + " labels");

  // Charts of the last minutes: one per route, for dirty and per input,
  // drawn from /ui/history (a point every 5 s: the first rates need two).
  for (const r of routes) {
    await page.waitForSelector(`#charts .chart[data-chart="route:${r}"] svg path.line`, { timeout: 30000 }).catch(() => fail(`no chart for route ${r}`));
  }
  await page.waitForFunction(() => [...document.querySelectorAll("#charts .chart-foot span:nth-child(2)")].some((s) => !/^max 0\//.test(s.textContent)), null, { timeout: 30000 })
    .catch(() => fail("every chart is flat at 0"));
  pass("rate charts", await page.$$eval("#charts .chart", (cs) => cs.map((c) => c.dataset.chart + " " + c.querySelector(".chart-foot span:nth-child(2)").textContent).join(", ")));

  // Dirty reasons at 0 are folded away behind "show all".
  const reasonRows = () => page.$$eval("#reasons tr[data-reason]", (trs) => trs.map((tr) => ({ reason: tr.dataset.reason, n: Number(tr.children[1].textContent), shown: !tr.hidden && tr.offsetParent !== null })));
  let rows = await reasonRows();
  const zeroShown = rows.filter((r) => r.n === 0 && r.shown), nonZeroHidden = rows.filter((r) => r.n > 0 && !r.shown);
  if (!rows.some((r) => r.n === 0)) fail("no dirty reason at 0 to fold: " + JSON.stringify(rows));
  if (zeroShown.length || nonZeroHidden.length) fail(`folding: shown at 0 ${JSON.stringify(zeroShown)}, hidden above 0 ${JSON.stringify(nonZeroHidden)}`);
  const folded = rows.filter((r) => r.n === 0).length;
  await page.click("#reasons-toggle");
  rows = await reasonRows();
  if (rows.some((r) => !r.shown)) fail("show all left rows hidden: " + JSON.stringify(rows.filter((r) => !r.shown)));
  await page.click("#reasons-toggle");
  rows = await reasonRows();
  if (rows.some((r) => r.n === 0 && r.shown)) fail("hiding again left rows at 0 shown");
  pass("dirty reasons at 0 folded", `${folded} folded, ${rows.length - folded} shown; show all and back`);

  // Alone in its group (the demo): the cluster view is this instance.
  await page.waitForSelector("#cluster tr[data-instance].reachable", { timeout: 20000 }).catch(() => fail("the cluster view does not show this instance"));
  const inst = await page.$$eval("#cluster tr[data-instance]", (trs) => trs.map((tr) => tr.textContent));
  if (inst.length !== 1) fail("the demo's cluster view lists " + JSON.stringify(inst));
  pass("cluster view: this instance", inst[0].slice(0, 60));

  await page.waitForSelector("#samples-dirty .sample .reason", { timeout: 20000 }).catch(() => fail("no dirty sample"));
  const sample = await page.$eval("#samples-dirty .sample", (d) => ({
    reason: d.querySelector(".reason").textContent,
    lines: [...d.querySelectorAll("li")].map((l) => l.textContent),
  }));
  if (!sample.reason || !sample.lines.some((l) => l.startsWith("reason: " + sample.reason))) fail("the dirty sample does not show its reason: " + JSON.stringify(sample));
  pass("dirty sample with its reason", sample.lines[0]);

  if (shot) {
    await page.waitForTimeout(1200); // one more state: rates on every edge
    await page.screenshot({ path: shot, fullPage: true });
    pass("screenshot", shot);
  }
  if (problems.length) fail(problems.join("; "));
  pass("no page errors, nothing from elsewhere");
} finally {
  await browser.close();
}
result.ok = true;
console.log(JSON.stringify(result));
