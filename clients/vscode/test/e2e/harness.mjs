// A real VS Code (code-server) in headless Chromium, offline, with the extension installed
// from its .vsix, sema-rpc from this repository on PATH and the scripted model server.
// Used by the end-to-end test (run.mjs) and by bench/bench_vscode.mjs.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const EXT_DIR = path.resolve(HERE, "../..");
export const REPO = path.resolve(EXT_DIR, "../..");
export const VSIX = path.join(EXT_DIR, "sema-vscode.vsix");
export const MODEL = "anthropic/claude-test";
const SKIP_EXIT = 3;

/** Install (or find cached) chromium, Node 24 and code-server. Returns the cache dir, or null to skip. */
export function setup() {
  const r = spawnSync(path.join(EXT_DIR, "scripts/setup-e2e.sh"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status === SKIP_EXIT) return null;
  if (r.status !== 0) throw new Error(`setup-e2e.sh failed (exit ${r.status})`);
  return r.stdout.trim().split("\n").pop();
}

function freePort() {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** tests/support/scripted_llm.py through the launcher the Node tests use. */
export async function startModel() {
  const python = process.env.SEMA_PYTHON ?? path.join(REPO, ".venv/bin/python");
  const child = spawn(python, [path.join(EXT_DIR, "test/support/scripted_llm_server.py")], { stdio: ["pipe", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout });
  const waiting = [];
  rl.on("line", (line) => waiting.shift()?.(JSON.parse(line)));
  const first = await new Promise((resolve, reject) => {
    waiting.push(resolve);
    child.once("exit", (code) => reject(new Error(`scripted model server exited ${code}`)));
  });
  const command = (cmd) =>
    new Promise((resolve) => {
      waiting.push(resolve);
      child.stdin.write(JSON.stringify(cmd) + "\n");
    });
  return {
    url: first.url,
    openaiUrl: first.openaiUrl,
    script: (...replies) => command({ cmd: "script", replies }),
    bodies: async () => (await command({ cmd: "requests", bodies: true })).bodies,
    paths: async () => (await command({ cmd: "requests" })).paths,
    open: (gate) => command({ cmd: "open", gate }),
    stop: () => new Promise((resolve) => { child.once("exit", resolve); child.stdin.end(); }),
  };
}

/** PATH without any directory that holds a `sema-rpc` (nor this repository's venv). */
function pathWithoutServer(dirs) {
  return dirs.filter((dir) => {
    if (!dir || path.resolve(dir) === path.join(REPO, ".venv/bin")) return false;
    try {
      accessSync(path.join(dir, "sema-rpc"), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * The Python set-up of the machine, for the extension's private install: the PIP_, UV_, PYENV_ variables and
 * the user's pip.conf (read only; HOME is a temp folder here).
 */
function pipEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("PIP_") || k.startsWith("UV_") || k.startsWith("PYENV_")));
  const conf = path.join(process.env.XDG_CONFIG_HOME ?? path.join(homedir(), ".config"), "pip/pip.conf");
  if (!env.PIP_CONFIG_FILE && existsSync(conf)) env.PIP_CONFIG_FILE = conf;
  return env;
}

/**
 * Everything up to a workbench showing the workspace. `W` is a fresh temp folder holding
 * HOME, XDG dirs, SEMA_ROOT, code-server's data and the workspace: nothing touches the real home.
 * `serverOnPath: false`: no `sema.serverPath` and no `sema-rpc` on PATH (the extension installs
 * its own).
 */
export async function startVSCode({ cache, model, workspaceFiles = {}, modelsJson, extraEnv = {}, serverOnPath = true, log = console.log, trusted = true, beforeStart }) {
  const W = mkdtempSync(path.join(tmpdir(), "sema-vscode-e2e-"));
  const dirs = {
    home: path.join(W, "home"),
    semaRoot: path.join(W, "sema-root"),
    workspace: path.join(W, "workspace"),
    user: path.join(W, "cs-data/user"),
    ext: path.join(W, "cs-data/ext"),
    xdg: path.join(W, "xdg"),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  if (modelsJson) writeFileSync(path.join(dirs.semaRoot, "models.json"), JSON.stringify(modelsJson));
  for (const [rel, text] of Object.entries(workspaceFiles)) {
    mkdirSync(path.dirname(path.join(dirs.workspace, rel)), { recursive: true });
    writeFileSync(path.join(dirs.workspace, rel), text);
  }
  beforeStart?.(dirs);
  mkdirSync(path.join(dirs.user, "User"), { recursive: true });
  writeFileSync(
    path.join(dirs.user, "User/settings.json"),
    JSON.stringify({
      "telemetry.telemetryLevel": "off",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "update.mode": "none",
      "chat.disableAIFeatures": true,
      "workbench.enableExperiments": false,
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      // `trusted: false`: Workspace Trust on, the folder opens in Restricted Mode (no prompt).
      "security.workspace.trust.enabled": !trusted,
      "security.workspace.trust.startupPrompt": "never",
      "security.workspace.trust.banner": "never",
      "sema.model": MODEL,
      ...(serverOnPath ? { "sema.serverPath": path.join(REPO, ".venv/bin/sema-rpc") } : {}),
    }),
  );
  // sema.serverPath is a machine setting: code-server (a remote window) reads it from the
  // remote machine's settings, never from the browser-side user settings.
  mkdirSync(path.join(dirs.user, "Machine"), { recursive: true });
  writeFileSync(
    path.join(dirs.user, "Machine/settings.json"),
    JSON.stringify(serverOnPath ? { "sema.serverPath": path.join(REPO, ".venv/bin/sema-rpc") } : {}),
  );
  const port = await freePort();
  const config = path.join(W, "cs-config.yaml");
  writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const node24 = path.join(cache, "node24/node_modules/node/bin");
  const entry = path.join(cache, "cs/node_modules/code-server/out/node/entry.js");
  const env = {
    PATH: serverOnPath
      ? [node24, path.join(REPO, ".venv/bin"), process.env.PATH].join(path.delimiter)
      : [node24, ...pathWithoutServer((process.env.PATH ?? "").split(path.delimiter))].join(path.delimiter),
    ...(serverOnPath ? {} : pipEnv()),
    HOME: dirs.home,
    XDG_CONFIG_HOME: path.join(dirs.xdg, "config"),
    XDG_DATA_HOME: path.join(dirs.xdg, "data"),
    XDG_CACHE_HOME: path.join(dirs.xdg, "cache"),
    EXTENSIONS_GALLERY: "{}",
    SEMA_ROOT: dirs.semaRoot,
    ANTHROPIC_API_KEY: "sk-ant-test-key-000000",
    ANTHROPIC_BASE_URL: model.url,
    OPENAI_API_KEY: "sk-test-openai-000000",
    OPENAI_BASE_URL: model.openaiUrl,
    SEMA_MAX_RETRIES: "0",
    SEMA_TIKTOKEN: "off",
    ...extraEnv,
  };
  const common = ["--config", config, "--user-data-dir", dirs.user, "--extensions-dir", dirs.ext];
  const install = spawnSync(path.join(node24, "node"), [entry, ...common, "--install-extension", VSIX], { env, encoding: "utf8" });
  if (install.status !== 0) throw new Error(`installing the vsix failed: ${install.stdout}\n${install.stderr}`);
  log(`installed ${path.basename(VSIX)}: ${install.stdout.trim().split("\n").pop()}`);
  const serverLog = path.join(W, "code-server.log");
  const { openSync } = await import("node:fs");
  const out = openSync(serverLog, "w");
  const server = spawn(
    path.join(node24, "node"),
    [entry, ...common, "--disable-telemetry", "--disable-update-check", ...(trusted ? ["--disable-workspace-trust"] : []), dirs.workspace],
    { env, stdio: ["ignore", out, out] },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 120) throw new Error(`code-server did not start; see ${serverLog}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    env: { ...process.env, HOME: dirs.home, XDG_CONFIG_HOME: path.join(dirs.xdg, "config"), XDG_CACHE_HOME: path.join(dirs.xdg, "cache") },
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  page.on("console", (m) => {
    if (m.type() === "error" && !/vsda|404/.test(m.text())) log(`console.error: ${m.text().slice(0, 200)}`);
  });
  await page.goto(`${base}/?folder=${encodeURIComponent(dirs.workspace)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
  await page.waitForSelector(".statusbar", { timeout: 90000 });

  async function stop() {
    await browser.close().catch(() => undefined);
    if (server.exitCode === null) {
      const exited = new Promise((r) => server.once("exit", r));
      server.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 8000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
    }
    if (!process.env.SEMA_E2E_KEEP) rmSync(W, { recursive: true, force: true });
  }
  return { W, dirs, page, browser, server, serverLog, stop };
}

/**
 * Run a command from the command palette. Retried: right after start-up the palette may
 * open before the extensions' commands are registered, and then never lists them.
 */
export async function runCommand(page, title, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.keyboard.press("Control+Shift+P");
    await page.locator(".quick-input-widget input").waitFor({ state: "visible", timeout: 20000 });
    await page.keyboard.type(title);
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
    try {
      await row.waitFor({ timeout: 4000 });
      await page.keyboard.press("Enter");
      return;
    } catch (err) {
      await page.keyboard.press("Escape");
      if (Date.now() > deadline) throw err;
      await page.waitForTimeout(1000);
    }
  }
}

/** The chat webview's document (a webview is two nested iframes). */
/**
 * What every e2e script does first: its artifacts folder `artifacts/<name>` (emptied first
 * with `fresh`), a `lap(message)` that logs the seconds since the start, and the browser
 * cache from `setup()` — or, where chromium/code-server cannot be installed, a SKIPPED line
 * and exit 0. `what` names the script in that line (" (attach)").
 */
export function begin(name, { what = "", fresh = false, skipNote = "" } = {}) {
  const artifacts = path.join(EXT_DIR, "artifacts", name);
  const t0 = Date.now();
  const lap = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
  const cache = setup();
  if (!cache) {
    console.log(`\n*** test-vscode${what} SKIPPED: chromium/code-server cannot be installed on this machine${skipNote}. ***\n`);
    process.exit(0);
  }
  if (fresh) rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  return { ARTIFACTS: artifacts, t0, lap, cache };
}

/** A failed e2e script: a last screenshot, the error, where code-server's log is; exit code 1. */
export async function failed(err, shot, env) {
  await shot("failure").catch(() => undefined);
  console.error(`FAIL: ${err.stack ?? err}`);
  console.error(`code-server log: ${env.serverLog} (kept: SEMA_E2E_KEEP=1 keeps the temp folder)`);
  process.exitCode = 1;
}

/** `shot(name)`: a numbered screenshot of the page into `dir` (01-name.png, 02-…), logged. */
export function screenshotter(page, dir, log = console.log) {
  let step = 0;
  return async (name) => {
    const file = path.join(dir, `${String(++step).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file });
    log(`screenshot ${path.basename(file)}`);
  };
}

export function chatFrame(page) {
  return page.frameLocator("iframe.webview").frameLocator("#active-frame");
}

export async function openChat(page) {
  await runCommand(page, "Sema: Open Chat");
  const frame = chatFrame(page);
  await frame.locator("textarea.input").waitFor({ timeout: 60000 });
  return frame;
}
