// End to end in a real VS Code: code-server in headless Chromium, offline. `make test-vscode`.
// Screenshots of every step go to clients/vscode/artifacts/e2e/.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import * as path from "node:path";
import { EXT_DIR, openChat, setup, startModel, startVSCode } from "./harness.mjs";

const ARTIFACTS = path.join(EXT_DIR, "artifacts/e2e");
const t0 = Date.now();
const lap = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);

const cache = setup();
if (!cache) {
  console.log("\n*** test-vscode SKIPPED: chromium/code-server cannot be installed on this machine (see the message above). ***\n");
  process.exit(0);
}
rmSync(ARTIFACTS, { recursive: true, force: true });
mkdirSync(ARTIFACTS, { recursive: true });

const FIRST = "Create a greeting file";
const model = await startModel();
await model.script(
  // 1: streamed text, then a Write that needs consent
  {
    text: "I'll create **hello.txt** with a short greeting.\n\n```python\nprint('hello')\n```\n",
    chunks: 12,
    delay_s: 0.08,
    tools: [["Write", { file_path: "hello.txt", content: "Hello from Sema!\n" }, "toolu_write_1"]],
  },
  { text: "Created `hello.txt`. It says *Hello from Sema!*", chunks: 6 },
  // 2: a long stream the test stops
  { deltas: 3000, delay_s: 0.05 },
  // 3: after resuming the first session
  { text: "Earlier I wrote hello.txt for you.", chunks: 4 },
);

const env = await startVSCode({
  cache,
  model,
  workspaceFiles: { "README.md": "# Demo workspace\n", "src/app.py": "print('app')\n" },
  log: lap,
});
const { page, dirs } = env;
let step = 0;
const shot = async (name) => {
  const file = path.join(ARTIFACTS, `${String(++step).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  lap(`screenshot ${path.basename(file)}`);
};

try {
  lap("workbench up");
  const chat = await openChat(page);
  await chat.locator(".welcome").waitFor();
  // A wider side bar, as people use a chat panel (the sash between side bar and editor).
  const sash = page.locator(".part.sidebar").first();
  const box = await sash.boundingBox();
  if (box) {
    await page.mouse.move(box.x + box.width + 1, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 520, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
  }
  await shot("chat-open");

  // Prompt 1: streamed text
  await chat.locator("textarea.input").fill(FIRST);
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".user", { hasText: FIRST }).waitFor();
  const answer = chat.locator(".md.answer").first();
  await answer.waitFor({ timeout: 60000 });
  await chat.locator(".md.answer", { hasText: "I'll create" }).waitFor({ timeout: 30000 });
  const partial = await answer.innerText();
  await shot("streaming");
  await chat.locator(".md.answer pre.hljs", { hasText: "print" }).waitFor({ timeout: 30000 });
  const full = await answer.innerText();
  assert.ok(full.length > partial.length, "the answer grew while streaming");
  assert.equal(await answer.locator("strong", { hasText: "hello.txt" }).count(), 1, "Markdown is rendered");
  assert.ok((await answer.locator("pre.hljs .hljs-built_in, pre.hljs .hljs-string").count()) > 0, "code is highlighted");

  // Consent inline: open the diff, then allow once
  const consent = chat.locator(".request.permission");
  await consent.waitFor({ timeout: 30000 });
  assert.match(await consent.innerText(), /\+Hello from Sema!/);
  assert.ok(!existsSync(path.join(dirs.workspace, "hello.txt")), "nothing written before consent");
  await shot("consent-inline");
  await consent.locator("button.show-diff").click();
  const diffEditor = page.locator(".monaco-diff-editor");
  await diffEditor.first().waitFor({ timeout: 30000 });
  await page.locator(".tab", { hasText: "hello.txt" }).first().waitFor({ timeout: 10000 });
  await page.locator(".monaco-diff-editor .view-lines", { hasText: "Hello from Sema!" }).first().waitFor({ timeout: 20000 });
  await shot("diff-editor");
  await consent.locator("button.allow").click();
  await chat.locator(".md.answer", { hasText: "Created hello.txt" }).waitFor({ timeout: 30000 });
  assert.equal(readFileSync(path.join(dirs.workspace, "hello.txt"), "utf8"), "Hello from Sema!\n");
  await chat.locator('.tool[data-status="done"]', { hasText: "hello.txt" }).waitFor();
  await chat.locator("button.stop.hidden").waitFor({ state: "attached" });
  await shot("file-written");
  // The path in the tool card opens the file in the editor.
  await chat.locator(".tool .file-link", { hasText: "hello.txt" }).first().click();
  await page.locator(".tab.active", { hasText: "hello.txt" }).waitFor({ timeout: 20000 });
  lap("file written, its path opens the file");

  // Prompt 2, in a new chat: stop it while it streams
  await chat.locator("button.new-chat").click();
  await chat.locator(".welcome .session-item", { hasText: FIRST }).waitFor({ timeout: 30000 });
  await chat.locator("textarea.input").fill("Count slowly to three thousand");
  await chat.locator("textarea.input").press("Enter");
  const stop = chat.locator("button.stop:not(.hidden)");
  await stop.waitFor({ timeout: 30000 });
  await chat.locator(".md.answer", { hasText: "w3 " }).waitFor({ timeout: 60000 });
  await shot("second-prompt-streaming");
  await stop.click();
  await chat.locator(".notice.interrupted").waitFor({ timeout: 30000 });
  await chat.locator("button.stop.hidden").waitFor({ state: "attached", timeout: 30000 });
  const streamed = await chat.locator(".md.answer").last().innerText();
  assert.ok(!streamed.includes("w2999"), "the stream was stopped before its end");
  await shot("stopped");

  // Resume the first session from the list
  await chat.locator("button.sessions-btn").click();
  const item = chat.locator(".sessions-overlay .session-item", { hasText: FIRST });
  await item.waitFor({ timeout: 30000 });
  await shot("sessions-list");
  await item.click();
  await chat.locator(".resumed", { hasText: FIRST }).waitFor({ timeout: 30000 });
  await chat.locator("textarea.input").fill("What did you write?");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".md.answer", { hasText: "Earlier I wrote hello.txt" }).waitFor({ timeout: 60000 });
  const bodies = await model.bodies();
  const last = JSON.stringify(bodies.at(-1));
  assert.ok(last.includes(FIRST), "the resumed session sent its old history to the model");
  assert.ok(!last.includes("Count slowly"), "and not the other session's");
  await shot("resumed");
  lap("PASS");
} catch (err) {
  await shot("failure").catch(() => undefined);
  console.error(`FAIL: ${err.stack ?? err}`);
  console.error(`code-server log: ${env.serverLog} (kept: SEMA_E2E_KEEP=1 keeps the temp folder)`);
  process.exitCode = 1;
} finally {
  await env.stop();
  await model.stop();
}
