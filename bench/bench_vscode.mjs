// Figures of the VS Code extension, measured in a real VS Code (code-server in headless
// Chromium, the e2e harness) against the real sema-rpc and the scripted model server:
//   - activation to `initialize` answered (extension host clock)
//   - send to first token rendered in the webview
//   - a 20,000-delta stream: deltas/s rendered, and how far the webview trails the turn's end
// Run: make vsix && node bench/bench_vscode.mjs   (needs what `make test-vscode` installs)
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openChat, setup, startModel, startVSCode } from "../clients/vscode/test/e2e/harness.mjs";

const DELTAS = Number(process.env.BENCH_DELTAS ?? 20000);
const cache = setup();
if (!cache) {
  console.log("bench_vscode: SKIPPED (chromium/code-server cannot be installed here)");
  process.exit(0);
}
const benchDir = mkdtempSync(path.join(tmpdir(), "sema-vscode-bench-"));
const benchFile = path.join(benchDir, "figures.jsonl");
const model = await startModel();
await model.script({ text: "Hello there, first token.", chunks: 5 }, { deltas: DELTAS });
const env = await startVSCode({ cache, model, extraEnv: { SEMA_VSCODE_BENCH_FILE: benchFile }, log: () => undefined });
const figures = () => (existsSync(benchFile) ? readFileSync(benchFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);
const waitFigure = async (name, n = 1) => {
  for (let i = 0; i < 1200; i++) {
    const found = figures().filter((f) => f.figure === name);
    if (found.length >= n) return found[n - 1];
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no figure ${name}`);
};
try {
  const chat = await openChat(env.page);
  await chat.locator("#app[data-session]").waitFor({ timeout: 120000 }); // server and session ready
  await chat.locator("textarea.input").fill("Say hello");
  await chat.locator("textarea.input").press("Enter");
  const init = await waitFigure("activationToInitialize");
  const first = await waitFigure("sendToFirstTokenRendered");
  await waitFigure("streamRendered", 1);
  await chat.locator("textarea.input").fill("Stream a lot");
  await chat.locator("textarea.input").press("Enter");
  const stream = await waitFigure("streamRendered", 2);
  const expectedChars = Array.from({ length: DELTAS }, (_, i) => `w${i} `).join("").trim().length;
  console.log(`activation -> initialize answered:        ${init.ms} ms`);
  console.log(`send -> first token rendered in webview:  ${first.ms} ms`);
  console.log(`${stream.deltas} deltas: first chunk -> all rendered: ${stream.firstChunkToRenderedMs} ms` +
    ` = ${Math.round((stream.deltas / stream.firstChunkToRenderedMs) * 1000)} deltas/s rendered`);
  console.log(`webview behind the turn's end:            ${stream.turnEndToRenderedMs} ms`);
  console.log(`rendered text: ${stream.chars} chars (expected ${expectedChars})`);
} finally {
  await env.stop();
  await model.stop();
  rmSync(benchDir, { recursive: true, force: true });
}
