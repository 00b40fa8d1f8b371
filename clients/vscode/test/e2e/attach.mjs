// "Sema: Attach to a Running Session…" in a real VS Code (code-server in headless Chromium,
// offline), run by `make test-vscode`: a `sema-rpc run --listen unix` one-shot started
// outside the editor waits for consent to a Write; the command lists its live session, the
// chat opens on it with the earlier conversation drawn, the Write is allowed in place, the
// rest of the turn streams in and the one-shot ends having written the file.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { MODEL, REPO, begin, chatFrame, failed, runCommand, screenshotter, startModel, startVSCode } from "./harness.mjs";

const { ARTIFACTS, lap, cache } = begin("e2e-attach", { what: " (attach)" });

const model = await startModel();
await model.script(
  { tools: [["Write", { file_path: "notes.txt", content: "hello\n" }, "toolu_write_1"]] },
  { text: "Written the notes.", chunks: 3 },
);
const env = await startVSCode({ cache, model, workspaceFiles: { "README.md": "# Attach\n" }, log: lap });
const { page, dirs } = env;
const shot = screenshotter(page, ARTIFACTS, lap);

// The one-shot, outside the editor, in the same SEMA_ROOT (its socket and endpoint file).
const run = spawn(
  path.join(REPO, ".venv/bin/sema-rpc"),
  ["run", "--format", "text", "--model", MODEL, "--cwd", dirs.workspace, "--listen", "unix", "write notes"],
  {
    env: {
      PATH: process.env.PATH,
      HOME: dirs.home,
      SEMA_ROOT: dirs.semaRoot,
      ANTHROPIC_API_KEY: "sk-ant-test-key-000000",
      ANTHROPIC_BASE_URL: model.url,
      SEMA_MAX_RETRIES: "0",
      SEMA_TIKTOKEN: "off",
    },
    stdio: ["ignore", "pipe", "pipe"],
  },
);
let runOut = "";
run.stdout.on("data", (d) => (runOut += d));
const runExit = new Promise((resolve) => run.once("exit", (code) => resolve(code)));

try {
  const sessionLine = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: run.stderr });
    rl.on("line", (line) => {
      lap(`run: ${line}`);
      if (line.includes("sema-rpc attach ")) resolve(line);
    });
    run.once("exit", (code) => reject(new Error(`the run ended (${code}) before its session started`)));
  });
  const sessionId = /sema-rpc attach (\S+)\)/.exec(sessionLine)[1];
  lap(`one-shot session ${sessionId}`);

  await runCommand(page, "Sema: Attach to a Running Session…");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "write notes" }).first();
  await row.waitFor({ timeout: 60000 });
  await shot("live-sessions");
  await row.click();

  const chat = chatFrame(page);
  await chat.locator(".notice", { hasText: "Attached to a session of another process" }).waitFor({ timeout: 60000 });
  // The earlier conversation, read back from the server that hosts it.
  await chat.locator(".user.past", { hasText: "write notes" }).waitFor({ timeout: 30000 });
  const liveNotice = chat.locator(".notice", { hasText: "1 waiting for an answer" });
  await liveNotice.waitFor({ timeout: 30000 });
  const consent = chat.locator(".request.permission:not(.answered)", { hasText: "notes.txt" });
  await consent.waitFor({ timeout: 60000 });
  // What the session is doing is said first, then the request it waits on is asked again.
  const noticeFirst = await liveNotice.evaluate(
    (notice, card) => Boolean(notice.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING),
    await consent.elementHandle(),
  );
  assert.ok(noticeFirst, "the Live notice is drawn above the consent card sent again");
  assert.ok(!existsSync(path.join(dirs.workspace, "notes.txt")), "nothing written before consent");
  await shot("consent-in-place");
  await consent.locator("button.allow").click();
  await chat.locator(".md.answer", { hasText: "Written the notes." }).waitFor({ timeout: 60000 });
  await shot("answered");

  assert.equal(await Promise.race([runExit, new Promise((r) => setTimeout(() => r("timeout"), 60000))]), 0);
  assert.equal(readFileSync(path.join(dirs.workspace, "notes.txt"), "utf8"), "hello\n");
  assert.ok(runOut.includes("Written the notes."), "the one-shot printed the same answer");
  lap("PASS");
} catch (err) {
  await failed(err, shot, env);
} finally {
  if (run.exitCode === null) run.kill("SIGTERM");
  await env.stop();
  await model.stop();
}
