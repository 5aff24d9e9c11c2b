// The graph of more topologies in a real browser: for each web view in
// UI_URLS (a demo of each example, api.auth: none), once the edges carry
// their live rates, no two text boxes of the graph intersect (getBBox
// through getCTM), and no node's text runs out of its box. Prints one
// JSON line; exits 1 on the first failed check.
//
//   UI_URLS=http://127.0.0.1:P1/ui/,http://127.0.0.1:P2/ui/ CHROMIUM=/usr/bin/chromium node labels.test.mjs
import { chromium } from "playwright-core";
import { overlappingLabels, overflowingNodeText } from "./labels.mjs";

const urls = (process.env.UI_URLS || "").split(",").filter(Boolean);
if (urls.length === 0) {
  console.error("labels.test.mjs: set UI_URLS");
  process.exit(2);
}
const result = { urls, checks: [] };
const fail = (msg) => {
  result.error = msg;
  console.log(JSON.stringify(result));
  process.exit(1);
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1100 } });
  for (const url of urls) {
    const resp = await page.goto(url, { waitUntil: "load" });
    if (!resp || resp.status() !== 200) fail(`GET ${url}: ${resp && resp.status()}`);
    await page.waitForSelector("#conn.ok", { timeout: 20000 }).catch(() => fail(`${url}: the state stream never connected`));
    await page.waitForSelector("#graph [data-id]", { timeout: 20000 }).catch(() => fail(`${url}: no graph`));
    await page.waitForTimeout(2200); // two states: every edge with its rate
    const app = await page.textContent("#app");
    const overlaps = await page.evaluate(overlappingLabels, "#graph");
    if (overlaps.length) fail(`${app}: ${overlaps.length} overlapping graph labels: ${overlaps.slice(0, 8).join("; ")}`);
    const overflows = await page.evaluate(overflowingNodeText, "#graph");
    if (overflows.length) fail(`${app}: node text out of its box: ${overflows.slice(0, 8).join("; ")}`);
    result.checks.push(`${app}: ${await page.$$eval("#graph text", (ts) => ts.length)} labels, none overlapping`);
  }
} finally {
  await browser.close();
}
result.ok = true;
console.log(JSON.stringify(result));
