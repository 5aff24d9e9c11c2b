// The web view's cluster view in a real browser: three `router run`
// instances of one application on the demo's embedded Kafka, each
// reaching the others through the owner URL template. Opened at the first
// instance, the page must list all three with their input partitions
// (every partition once), lag and rates; then the last instance is killed
// (SIGKILL: it stays a member of the group until its session times out)
// and the page must mark it unreachable, its partitions still shown from
// the group's assignment. Prints one JSON line; exits 1 on the first
// failed check.
//
//   UI_URL=http://127.0.0.1:PORT/ui/ UI_TOKEN=... UI_INSTANCES=a,b,c UI_PARTITIONS=6 \
//   UI_KILL_PID=PID-of-c UI_SCREENSHOT=/tmp/cluster.png UI_SCREENSHOT_DOWN=/tmp/down.png \
//   CHROMIUM=/usr/bin/chromium node cluster.test.mjs
import { chromium } from "playwright-core";

const url = process.env.UI_URL;
const token = process.env.UI_TOKEN || "";
const instances = (process.env.UI_INSTANCES || "").split(",").filter(Boolean);
const partitions = Number(process.env.UI_PARTITIONS || 0);
const killPID = Number(process.env.UI_KILL_PID || 0);
if (!url || instances.length < 2 || !partitions || !killPID) {
  console.error("cluster.test.mjs: set UI_URL, UI_INSTANCES (two or more), UI_PARTITIONS and UI_KILL_PID");
  process.exit(2);
}
const killed = instances[instances.length - 1];
const result = { url, instances, checks: [] };
const fail = (msg) => {
  result.error = msg;
  console.log(JSON.stringify(result));
  process.exit(1);
};
const pass = (name, detail) => result.checks.push(detail === undefined ? name : `${name}: ${detail}`);

// rows reads the cluster table: one entry per instance row.
const rows = (page) => page.$$eval("#cluster tr[data-instance]", (trs) => trs.map((tr) => ({
  instance: tr.dataset.instance,
  reachable: tr.classList.contains("reachable"),
  status: tr.querySelector(".status").textContent,
  parts: tr.querySelector(".parts").textContent,
  lag: tr.querySelector(".lag").textContent,
  in: tr.querySelector(".in").textContent,
  text: tr.textContent,
})));

// partsOf turns "logs: 0,1  other: 3" into ["logs/0", "logs/1", "other/3"].
const partsOf = (s) => s === "none" ? [] : s.split(/\s{2,}/).flatMap((g) => {
  const [t, ps] = g.split(": ");
  return ps.split(",").map((p) => t + "/" + p);
});

async function until(page, what, cond, ms) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    last = await rows(page);
    if (cond(last)) return last;
    if (Date.now() > end) fail(`${what} within ${ms / 1000} s; the view shows ${JSON.stringify(last)}`);
    await page.waitForTimeout(500);
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1100 } });
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("request", (r) => { if (!r.url().startsWith(new URL(url).origin)) problems.push("external request: " + r.url()); });
  const resp = await page.goto(url, { waitUntil: "load" });
  if (!resp || resp.status() !== 200) fail(`GET ${url}: ${resp && resp.status()}`);
  if (token) {
    await page.waitForSelector("#login:not([hidden])", { timeout: 20000 }).catch(() => fail("no sign-in"));
    await page.fill("#token", token);
    await page.click("#login-go");
    await page.waitForSelector("#view:not([hidden])", { timeout: 20000 }).catch(() => fail("signing in did not open the view"));
  }
  pass("signed in at " + instances[0]);

  // All of them, reachable, the input partitions split between them.
  const all = await until(page, "every instance reachable with its partitions", (rs) =>
    instances.every((i) => rs.some((r) => r.instance === i && r.reachable && r.parts !== "none")) &&
    rs.flatMap((r) => partsOf(r.parts)).length === partitions, 90000);
  const owned = all.flatMap((r) => partsOf(r.parts));
  if (new Set(owned).size !== partitions) fail("a partition is listed twice: " + owned.join(" "));
  if (!all.find((r) => r.instance === instances[0]).text.includes("this page")) fail("the page's own instance is not marked");
  for (const r of all) if (!/^\d+$/.test(r.lag)) fail(`instance ${r.instance} shows no lag: ${r.lag}`);
  pass("every instance with its partitions and lag", all.map((r) => `${r.instance} [${r.parts}] lag ${r.lag}`).join("; "));
  // Each consumes its share of the demo's records: its rate reaches the
  // page from its own /ui/status.
  const busy = await until(page, "every instance with a rate in", (rs) => instances.every((i) => rs.some((r) => r.instance === i && Number(r.in) > 0)), 30000);
  pass("every instance's rate", busy.map((r) => `${r.instance} ${r.in}/s`).join("; "));

  // The charts have their first rates before the picture is taken.
  await page.waitForFunction(() => [...document.querySelectorAll("#charts .chart-foot span:nth-child(2)")].some((s) => !/^max 0\//.test(s.textContent)), null, { timeout: 30000 })
    .catch(() => fail("every chart is flat at 0"));
  const clip = async (path) => {
    const box = await page.$eval("#cluster", (t) => { const r = t.closest("section").getBoundingClientRect(); return r.bottom + window.scrollY; });
    await page.screenshot({ path, clip: { x: 0, y: 0, width: 1500, height: Math.ceil(box) + 16 } });
  };
  if (process.env.UI_SCREENSHOT) {
    await clip(process.env.UI_SCREENSHOT);
    pass("screenshot", process.env.UI_SCREENSHOT);
  }

  // One instance dies without leaving the group: it stays a member (its
  // partitions assigned) until its session times out, and cannot answer.
  process.kill(killPID, "SIGKILL");
  const down = await until(page, `${killed} marked unreachable`, (rs) => rs.some((r) => r.instance === killed && !r.reachable), 30000);
  const k = down.find((r) => r.instance === killed);
  if (!/unreachable/.test(k.status)) fail("the unreachable instance does not say so: " + k.status);
  if (partsOf(k.parts).length === 0) fail("the unreachable instance's partitions are not shown: " + k.parts);
  if (down.some((r) => r.instance !== killed && !r.reachable)) fail("another instance is marked unreachable: " + JSON.stringify(down));
  pass("a killed instance marked unreachable", `${k.status.slice(0, 80)} [${k.parts}]`);
  if (process.env.UI_SCREENSHOT_DOWN) {
    await clip(process.env.UI_SCREENSHOT_DOWN);
    pass("screenshot", process.env.UI_SCREENSHOT_DOWN);
  }
  if (problems.length) fail(problems.join("; "));
  pass("no page errors, nothing from elsewhere");
} finally {
  await browser.close();
}
result.ok = true;
console.log(JSON.stringify(result));
