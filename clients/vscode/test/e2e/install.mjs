// End to end in a real VS Code where no sema-rpc exists (no sema.serverPath, none on PATH):
// the extension offers to install the server its .vsix ships, the user accepts, a progress
// notification runs while the wheel and its dependencies go into a private virtualenv under
// the extension's global storage, and then a prompt gets a streamed answer. Then an install
// older than the shipped wheel is replaced at the next start. `make test-vscode`.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { begin, EXT_DIR, failed, openChat, runCommand, screenshotter, startModel, startVSCode, VSIX } from "./harness.mjs";

/** The processes whose command line runs something inside `dir` (from the process table). */
function serverProcesses(dir) {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
      } catch {
        return [];
      }
    })
    .filter((argv) => argv.some((a) => a.startsWith(dir + path.sep)));
}

const { ARTIFACTS, t0, lap, cache } = begin("e2e-install", { what: " (install)" });
const secs = (from) => ((Date.now() - from) / 1000).toFixed(1);
const wheel = readdirSync(path.join(EXT_DIR, "server")).find((f) => f.endsWith(".whl"));
assert.ok(wheel, "the .vsix build put the server wheel in server/");
const version = /^sema_rpc-([^-]+)-/.exec(wheel)[1];

const model = await startModel();
await model.script(
  { text: "Hello from the installed server. It streams in pieces.", chunks: 10, delay_s: 0.08 },
  { text: "Upgraded and here.", chunks: 3 },
);

const started = Date.now();
const env = await startVSCode({ cache, model, workspaceFiles: { "README.md": "# Demo\n" }, serverOnPath: false, log: lap });
const { page, dirs } = env;
const shot = screenshotter(page, ARTIFACTS, lap);

try {
  const codeServerEnv = readFileSync(`/proc/${env.server.pid}/environ`, "utf8").split("\0");
  const envPath = codeServerEnv.find((e) => e.startsWith("PATH=")).slice(5);
  for (const dir of envPath.split(path.delimiter)) {
    assert.ok(!existsSync(path.join(dir, "sema-rpc")), `sema-rpc must not be on code-server's PATH (${dir})`);
  }
  lap(`workbench up (${path.basename(VSIX)}, no sema-rpc on PATH)`);
  const chat = await openChat(page);

  // The offer, as a notification with an Install button.
  const offer = page.locator(".notifications-toasts .notification-toast", { hasText: "Sema needs its server" });
  await offer.waitFor({ timeout: 60000 });
  // The chat says why it cannot start, and what to run.
  await chat.locator(".server-status.missing", { hasText: "Sema: Install Server" }).waitFor({ timeout: 10000 });
  await shot("install-offered");
  const clickedAt = Date.now();
  await offer.getByRole("button", { name: "Install", exact: true }).click();

  // The progress notification, then the result.
  await page.locator(".notifications-toasts", { hasText: "Sema: installing the server" }).waitFor({ timeout: 30000 });
  await shot("installing");
  const done = page.locator(".notifications-toasts .notification-toast", { hasText: "Sema's server is installed" });
  const failed = page.locator(".notifications-toasts .notification-toast", { hasText: "Installing Sema's server failed" });
  await done.or(failed).waitFor({ timeout: 600000 });
  if (await failed.count()) throw new Error(await failed.innerText());
  const installedAt = Date.now();
  lap(`installed in ${secs(clickedAt)} s`);
  await chat.locator(".server-status.hidden").waitFor({ state: "attached", timeout: 60000 });
  await shot("installed");

  // The private install: a venv under the extension's global storage, named by server.json.
  const storage = path.join(dirs.user, "User/globalStorage/sema.sema-vscode/server");
  const state = JSON.parse(readFileSync(path.join(storage, "server.json"), "utf8"));
  assert.equal(state.version, version, "the bundled wheel's version is installed");
  const server = path.join(storage, state.venv, "bin/sema-rpc");
  assert.ok(existsSync(server), `${server} exists`);
  assert.ok(!existsSync(path.join(storage, "install.lock")), "the install lock is released");
  assert.equal(readdirSync(storage).filter((f) => f.startsWith("venv-")).length, 1, "one venv");

  // The extension now runs that server: a prompt gets a streamed answer.
  await chat.locator("textarea.input").fill("Say hello");
  await chat.locator("textarea.input").press("Enter");
  const answer = chat.locator(".md.answer").first();
  await answer.waitFor({ timeout: 120000 });
  const partial = await answer.innerText();
  await chat.locator(".md.answer", { hasText: "It streams in pieces." }).waitFor({ timeout: 60000 });
  const answeredAt = Date.now();
  const full = await answer.innerText();
  assert.ok(full.length > partial.length, `the answer grew while streaming (${JSON.stringify(partial)})`);
  assert.ok(serverProcesses(path.join(storage, state.venv)).length > 0, "the running server is the private install's");
  await shot("answered");

  // Another .vsix version: the install on disk is older than the wheel shipped now. At the
  // next start the extension replaces it, with the same progress, and keeps the previous venv.
  writeFileSync(path.join(storage, "server.json"), JSON.stringify({ ...state, version: "0.0.9" }));
  const upgradeFrom = Date.now();
  await runCommand(page, "Sema: Restart Server");
  await page.locator(".notifications-toasts", { hasText: "Sema: installing the server" }).waitFor({ timeout: 60000 });
  await shot("upgrading");
  await chat.locator(".notice", { hasText: "server was restarted" }).waitFor({ timeout: 600000 });
  const upgraded = JSON.parse(readFileSync(path.join(storage, "server.json"), "utf8"));
  assert.equal(upgraded.version, version);
  assert.notEqual(upgraded.venv, state.venv, "a new venv");
  assert.deepEqual(readdirSync(storage).filter((f) => f.startsWith("venv-")).sort(), [state.venv, upgraded.venv].sort(), "the previous venv is kept");
  lap(`upgraded in ${secs(upgradeFrom)} s`);
  await chat.locator("textarea.input").fill("Still there?");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".md.answer", { hasText: "Upgraded and here." }).waitFor({ timeout: 120000 });
  assert.ok(serverProcesses(path.join(storage, upgraded.venv)).length > 0, "the server now runs from the new venv");
  assert.equal(serverProcesses(path.join(storage, state.venv)).length, 0, "and no longer from the old one");
  await shot("upgraded");
  console.log(
    `FIGURE vscode-install: install ${((installedAt - clickedAt) / 1000).toFixed(1)} s (click → installed); ` +
      `first answer ${((answeredAt - clickedAt) / 1000).toFixed(1)} s after the click, ` +
      `${((answeredAt - started) / 1000).toFixed(1)} s after code-server was started`,
  );
  lap("PASS");
} catch (err) {
  await failed(err, shot, env);
} finally {
  await env.stop();
  await model.stop();
}
