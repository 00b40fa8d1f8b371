// Open a page written by `sema-rpc view` in headless Chromium and report what a person
// would see: node view_browser.mjs PAGE.html SCREENSHOT.png CHROMIUM [HOME]
// Prints one JSON object: the page's visible text, every request the page made, console
// errors (CSP violations show there), whether an injected script ran, what the
// "expand all" button did, and the tool durations shown.
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
// playwright-core is pinned by the VS Code client's package-lock.json (`npm ci` there).
const require = createRequire(path.join(here, "../../clients/vscode/package.json"));
const { chromium } = require("playwright-core");

const [page_path, screenshot, executable, home] = process.argv.slice(2);
const url = pathToFileURL(path.resolve(page_path)).href;
const env = { ...process.env };
if (home) Object.assign(env, { HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), XDG_CACHE_HOME: path.join(home, ".cache") });
const browser = await chromium.launch({
  executablePath: executable,
  headless: true,
  env,
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requests = [];
  const console_errors = [];
  const dialogs = [];
  page.on("request", (r) => {
    if (r.url() !== url) requests.push(r.url());
  });
  page.on("console", (m) => {
    if (m.type() === "error") console_errors.push(m.text());
  });
  page.on("dialog", async (d) => {
    dialogs.push(d.message());
    await d.dismiss();
  });
  await page.goto(url, { waitUntil: "load" });
  const before = await page.evaluate(() => ({
    pwned: window.__pwned ?? null,
    text: document.body.innerText,
    svg: document.querySelectorAll(".chart svg polyline").length,
    details: document.querySelectorAll("main details").length,
    open_before: document.querySelectorAll("main details[open]").length,
    durations: [...document.querySelectorAll(".item.tool")].map((el) => ({
      title: el.querySelector(".tool-title")?.textContent ?? "",
      duration: el.querySelector(".duration")?.textContent ?? null,
      decision: el.querySelector(".decision")?.textContent ?? null,
    })),
    scripts: document.querySelectorAll("script").length,
  }));
  await page.click("button[data-open='1']");
  const open_after = await page.evaluate(() => document.querySelectorAll("main details[open]").length);
  const text_open = await page.evaluate(() => document.body.innerText);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ ...before, open_after, text_open, requests, console_errors, dialogs }));
} finally {
  await browser.close();
}
