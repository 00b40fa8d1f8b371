// End to end in a real VS Code: code-server in headless Chromium, offline. `make test-vscode`.
// Screenshots of every step go to clients/vscode/artifacts/e2e/.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { begin, failed, MODEL, openChat, screenshotter, startModel, startVSCode } from "./harness.mjs";

/** The extension's output channel as code-server writes it (it holds the server's pid). */
function findSemaLog(userDir) {
  const logs = path.join(userDir, "logs");
  for (const run of readdirSync(logs).sort().reverse()) {
    const host = path.join(logs, run, "exthost1");
    if (!existsSync(host)) continue;
    for (const dir of readdirSync(host).filter((d) => d.startsWith("output_logging_"))) {
      const file = readdirSync(path.join(host, dir)).find((f) => f.endsWith("-Sema.log"));
      if (file) return path.join(host, dir, file);
    }
  }
  throw new Error("no Sema output log");
}

const { ARTIFACTS, lap, cache } = begin("e2e", { fresh: true, skipNote: " (see the message above)" });

const FIRST = "Create a greeting file";
const README = "# Demo workspace\n";
const README_REWRITTEN = "# Demo workspace\n\nRewritten by Sema.\n";
const REWRITE = "Rewrite the README";
// Two profiles on two providers: the picker switches between them.
const MODELS_JSON = {
  profiles: {
    "claude-test": { provider: "anthropic", modelName: "claude-test", contextLength: 200000, images: false },
    "gpt-test": {
      provider: "openai",
      modelName: "gpt-test",
      contextLength: 128000,
      images: true,
      price: { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 },
    },
  },
};
const model = await startModel();
await model.script(
  // 1: thinking, streamed text, then a Write that needs consent
  {
    thinking: "The user wants a greeting file.",
    text: "I'll create **hello.txt** with a short greeting.\n\n```python\nprint('hello')\n```\n",
    chunks: 12,
    delay_s: 0.08,
    tools: [["Write", { file_path: "hello.txt", content: "Hello from Sema!\n" }, "toolu_write_1"]],
  },
  { text: "Created `hello.txt`. It says *Hello from Sema!*", chunks: 6 },
  // 2: a long stream the test stops
  { deltas: 3000, delay_s: 0.05 },
  // 2b: the follow-up queued while 2 ran
  { text: "Done after the stop.", chunks: 3 },
  // 3: after resuming the first session
  { text: "Earlier I wrote hello.txt for you.", chunks: 4 },
  // 4: a search, a subagent (its own model call), then a question for the user
  { tools: [["Grep", { pattern: "print", output_mode: "content" }, "toolu_grep_1"]] },
  { tools: [["Task", { description: "Find the entry point", prompt: "Where does the app start?", subagent_type: "Explore" }, "toolu_task_1"]] },
  { text: "The app starts in src/app.py." },
  {
    tools: [["AskUserQuestion", { questions: [{ question: "Which greeting style?", header: "Style", options: [{ label: "Formal", description: "Good day" }, { label: "Casual", description: "Hey" }] }] }, "toolu_ask_1"]],
  },
  { text: "Casual it is." },
  // 5: Plan mode ends with ExitPlanMode
  { tools: [["ExitPlanMode", { plan: "# Add a farewell\n\n1. Write bye.txt\n2. Check it" }, "toolu_plan_1"]] },
  { text: "Starting on the plan." },
  // 6: after the server was killed and restarted
  { text: "Yes, still here.", chunks: 3 },
  // 7: in a new chat on the model picked from the list: a Write the user approves, then rewinds
  { tools: [["Read", { file_path: "README.md" }, "toolu_read_2"]] },
  { tools: [["Write", { file_path: "README.md", content: README_REWRITTEN }, "toolu_write_2"]] },
  { text: "README rewritten.", chunks: 3 },
  // 8: an image pasted into the input
  { text: "A single red pixel.", chunks: 2 },
);
// A 1x1 PNG.
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

const env = await startVSCode({
  cache,
  model,
  workspaceFiles: { "README.md": README, "src/app.py": "print('app')\n" },
  modelsJson: MODELS_JSON,
  log: lap,
});
const { page, dirs } = env;
const shot = screenshotter(page, ARTIFACTS, lap);

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
    await page.mouse.move(900, 600);
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
  const thinking = chat.locator("details.thinking");
  assert.equal(await thinking.getAttribute("open"), null, "thinking is folded");
  assert.match(await thinking.locator(".md").textContent(), /wants a greeting file/);

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
  // "Review changes": the turn's files, each opening its change in the diff editor.
  const review = chat.locator(".turn-diff").last();
  await review.locator("button.review", { hasText: "1 file" }).waitFor({ timeout: 30000 });
  await review.locator(".diff-file", { hasText: "hello.txt" }).click();
  await page.locator(".tab.active", { hasText: "hello.txt (changes of the turn)" }).waitFor({ timeout: 20000 });
  await page.locator(".monaco-diff-editor:visible .modified .view-lines", { hasText: "Hello from Sema!" }).waitFor({ timeout: 20000 });
  await shot("review-changes");
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
  // A follow-up typed while the agent works is queued, not lost by the Stop.
  await chat.locator("textarea.input").fill("Then just say done");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".user.queued", { hasText: "Then just say done" }).waitFor({ timeout: 10000 });
  await shot("second-prompt-streaming");
  await stop.click();
  await chat.locator(".notice.interrupted").waitFor({ timeout: 30000 });
  await chat.locator("button.stop.hidden").waitFor({ state: "attached", timeout: 30000 });
  await chat.locator(".md.answer", { hasText: "Done after the stop." }).waitFor({ timeout: 60000 });
  // The follow-up moved into the transcript when its own turn started, after the stopped one.
  const order = await chat.locator(".log > .user, .log > .md.answer, .log > .notice").allInnerTexts();
  const at = (t) => order.findIndex((x) => x.includes(t));
  assert.ok(at("w3 ") < at("Interrupted") && at("Interrupted") < at("Then just say done") && at("Then just say done") < at("Done after"), order.join(" | "));
  await chat.locator("button.stop.hidden").waitFor({ state: "attached", timeout: 30000 });
  const streamed = await chat.locator(".md.answer", { hasText: "w3 " }).innerText();
  assert.ok(!streamed.includes("w2999"), "the stream was stopped before its end");
  await shot("stopped");

  // Resume the first session from the list
  await chat.locator("button.sessions-btn").click();
  const item = chat.locator(".sessions-overlay .session-item", { hasText: FIRST });
  await item.waitFor({ timeout: 30000 });
  await shot("sessions-list");
  await item.click();
  await chat.locator(".resumed", { hasText: FIRST }).waitFor({ timeout: 30000 });
  // The resumed chat shows its earlier conversation, read back from the server.
  await chat.locator(".user.past", { hasText: FIRST }).waitFor({ timeout: 30000 });
  await chat.locator(".md.answer.past", { hasText: "Created hello.txt" }).waitFor({ timeout: 30000 });
  await chat.locator('.tool[data-status="done"]', { hasText: "hello.txt" }).waitFor({ timeout: 30000 });
  assert.equal(await chat.locator(".user", { hasText: "Count slowly" }).count(), 0, "not the other chat's");
  await chat.locator("textarea.input").fill("What did you write?");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".md.answer", { hasText: "Earlier I wrote hello.txt" }).waitFor({ timeout: 60000 });
  const bodies = await model.bodies();
  const last = JSON.stringify(bodies.at(-1));
  assert.ok(last.includes(FIRST), "the resumed session sent its old history to the model");
  assert.ok(!last.includes("Count slowly"), "and not the other session's");
  await shot("resumed");

  // A subagent's work folds under its Task card; a question is answered inline.
  await chat.locator("textarea.input").fill("Look around, then ask me");
  await chat.locator("textarea.input").press("Enter");
  const task = chat.locator(".tool.tool-task");
  await task.waitFor({ timeout: 60000 });
  const question = chat.locator(".request.question");
  await question.waitFor({ timeout: 60000 });
  // Search results link to the file and line.
  const grep = chat.locator(".tool.tool-grep");
  await grep.locator("summary").click();
  await grep.locator(".file-link", { hasText: "src/app.py:1" }).click();
  await page.locator(".tab.active", { hasText: "app.py" }).waitFor({ timeout: 20000 });
  await task.locator("summary").click();
  await task.locator(".subagent .md.answer", { hasText: "src/app.py" }).waitFor({ timeout: 10000 });
  assert.match(await task.locator(".tool-title").innerText(), /Explore.*Find the entry point/);
  assert.equal(await task.locator(".subagent .agent-status").innerText(), "completed");
  await question.locator("button.option", { hasText: "Casual" }).click();
  await shot("subagent-and-question");
  await question.locator("button.primary").click();
  await chat.locator(".md.answer", { hasText: "Casual it is." }).waitFor({ timeout: 60000 });
  assert.match(JSON.stringify((await model.bodies()).at(-1)), /Casual/, "the answer reached the model");

  // Plan mode: the plan is approved inline, the mode switches back to Agent.
  await chat.locator("button.mode").click();
  await chat.locator("button.mode.plan").waitFor({ timeout: 10000 });
  await chat.locator("textarea.input").fill("Plan a farewell file");
  await chat.locator("textarea.input").press("Enter");
  const plan = chat.locator(".request.plan-exit");
  await plan.waitFor({ timeout: 60000 });
  assert.match(await plan.innerText(), /Write bye\.txt/);
  await shot("plan-approval");
  await plan.locator("button.primary").click();
  await chat.locator(".md.answer", { hasText: "Starting on the plan." }).waitFor({ timeout: 60000 });
  await chat.locator("button.mode:not(.plan)").waitFor({ timeout: 10000 });

  // Completion: `/` lists the built-in commands, `@` the workspace's files.
  await chat.locator("textarea.input").fill("");
  await chat.locator("textarea.input").pressSequentially("/cl");
  await chat.locator(".completions .completion", { hasText: "/clear" }).waitFor({ timeout: 10000 });
  await chat.locator("textarea.input").fill("");
  await chat.locator("textarea.input").pressSequentially("look at @app");
  await chat.locator(".completions .completion", { hasText: "src/app.py" }).waitFor({ timeout: 10000 });
  await chat.locator("textarea.input").press("Enter");
  assert.equal(await chat.locator("textarea.input").inputValue(), "look at @src/app.py ");
  await shot("completion");
  await chat.locator("textarea.input").fill("");

  // The server dies: a visible notice, a new server, and the chat goes on.
  const semaLog = findSemaLog(env.dirs.user);
  const pid = Number(/\(pid (\d+);/.exec(readFileSync(semaLog, "utf8"))?.[1]);
  assert.ok(pid > 0, "the log names the server's pid");
  process.kill(pid, "SIGKILL");
  await page.locator(".notifications-toasts", { hasText: "Sema server stopped" }).waitFor({ timeout: 30000 });
  await chat.locator(".notice", { hasText: "server was restarted" }).waitFor({ timeout: 60000 });
  await shot("server-restarted");
  await chat.locator("textarea.input").fill("Are you still there?");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".md.answer", { hasText: "Yes, still here." }).waitFor({ timeout: 60000 });
  assert.match(JSON.stringify((await model.bodies()).at(-1)), /Create a greeting file/, "the same session, from its history");

  // A new chat on the model picked from the list (another provider's API).
  await chat.locator("button.new-chat").click();
  const picker = chat.locator("select.model:not(.hidden)");
  await picker.waitFor({ timeout: 30000 });
  const options = await picker.locator("option").allInnerTexts();
  assert.ok(options.includes("claude-test") && options.includes("gpt-test (images)"), options.join(" | "));
  assert.equal(await picker.inputValue(), MODEL, "the chat's own model is selected");
  await picker.selectOption("gpt-test");
  await chat.locator(".notice", { hasText: "Model: gpt-test" }).waitFor({ timeout: 30000 });
  await shot("model-picked");
  await chat.locator("textarea.input").fill(REWRITE);
  await chat.locator("textarea.input").press("Enter");
  const consent2 = chat.locator(".request.permission:not(.answered)");
  await consent2.waitFor({ timeout: 60000 });
  await consent2.locator("button.allow").click();
  await chat.locator(".md.answer", { hasText: "README rewritten." }).waitFor({ timeout: 60000 });
  assert.equal(readFileSync(path.join(dirs.workspace, "README.md"), "utf8"), README_REWRITTEN);
  const paths = await model.paths();
  assert.notEqual(paths.at(-1), "/v1/messages", `the picked model's API was called: ${paths.slice(-3)}`);
  assert.equal((await model.bodies()).at(-1).model, "gpt-test");
  // The model has a price: the usage indicator shows the session's cost.
  await chat.locator(".header .usage", { hasText: "$" }).waitFor({ timeout: 30000 });
  assert.match(await chat.locator(".header .usage").innerText(), /\$0\.\d{4}$/);
  await chat.locator(".turn-diff button.review", { hasText: "1 file" }).waitFor({ timeout: 30000 });
  await chat.locator(".turn-diff .diff-file", { hasText: "README.md" }).click();
  await page.locator(".tab.active", { hasText: "README.md (changes of the turn)" }).waitFor({ timeout: 20000 });
  const reviewed = page.locator(".monaco-diff-editor:visible");
  await reviewed.locator(".modified .view-lines", { hasText: "Rewritten by Sema." }).waitFor({ timeout: 20000 });
  await reviewed.locator(".original .view-lines", { hasText: "# Demo workspace" }).waitFor({ timeout: 20000 });
  await shot("review-readme");
  // "Review changes" itself opens the turn's whole patch, read-only, as a diff document.
  await chat.locator(".turn-diff button.review", { hasText: "1 file" }).click();
  await page.locator(".tab.active", { hasText: /sema-turn-\d+\.diff/ }).waitFor({ timeout: 20000 });
  await page.locator(".editor-instance:visible .view-lines", { hasText: "+Rewritten by Sema." }).waitFor({ timeout: 20000 });

  // Rewind to the first message, files and conversation: the README is back, the chat is cut,
  // the message is back in the input.
  const bubble = chat.locator(".log > .user", { hasText: REWRITE });
  await bubble.locator(".message-actions").waitFor({ state: "attached", timeout: 30000 });
  // The user edited the README after the agent: the rewind asks before overwriting that.
  writeFileSync(path.join(dirs.workspace, "README.md"), "# Edited by hand\n");
  await bubble.hover();
  await bubble.locator("button.rewind-both").click();
  const conflict = chat.locator(".request.rewind-conflict");
  await conflict.waitFor({ timeout: 30000 });
  assert.match(await conflict.innerText(), /README\.md — modified/);
  assert.equal(readFileSync(path.join(dirs.workspace, "README.md"), "utf8"), "# Edited by hand\n", "nothing changed yet");
  assert.equal(await chat.locator(".log > .user", { hasText: REWRITE }).count(), 1);
  await shot("rewind-conflict");
  await conflict.locator("button.overwrite").click();
  await chat.locator(".notice.rewound").waitFor({ timeout: 30000 });
  assert.equal(readFileSync(path.join(dirs.workspace, "README.md"), "utf8"), README, "the file is back");
  assert.equal(await chat.locator(".log > .user", { hasText: REWRITE }).count(), 0, "the message left the chat");
  assert.equal(await chat.locator(".md.answer", { hasText: "README rewritten." }).count(), 0, "and its answer");
  assert.equal(await chat.locator("textarea.input").inputValue(), REWRITE, "the message is back in the input");
  await shot("rewound");
  // Redo undoes the rewind: the README as the rewind found it (the hand edit), the conversation
  // back; rewinding again needs no confirmation (the redo left the file so).
  await chat.locator(".notice.rewound button.redo").click();
  await chat.locator(".notice.redone").waitFor({ timeout: 30000 });
  assert.equal(readFileSync(path.join(dirs.workspace, "README.md"), "utf8"), "# Edited by hand\n");
  await chat.locator(".log > .user", { hasText: REWRITE }).waitFor({ timeout: 30000 });
  assert.equal(await chat.locator("textarea.input").inputValue(), "", "the message left the input again");
  const again = chat.locator(".log > .user", { hasText: REWRITE });
  await again.hover();
  await again.locator("button.rewind-both").click();
  await chat.locator(".notice.rewound").waitFor({ timeout: 30000 });
  assert.equal(readFileSync(path.join(dirs.workspace, "README.md"), "utf8"), README);

  // An image pasted into the input goes to the model with the text, as an image block.
  await chat.locator("textarea.input").fill("What is in this picture?");
  await chat.locator("textarea.input").evaluate((el, data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], "pixel.png", { type: "image/png" }));
    el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
  }, PIXEL);
  await chat.locator(".attachments .attachment", { hasText: "pixel.png" }).waitFor({ timeout: 10000 });
  await shot("image-pasted");
  await chat.locator("textarea.input").press("Enter");
  await chat.locator(".md.answer", { hasText: "A single red pixel." }).waitFor({ timeout: 60000 });
  await chat.locator(".log > .user .image-chip", { hasText: "pixel.png" }).waitFor({ timeout: 10000 });
  const sent = JSON.stringify((await model.bodies()).at(-1).messages);
  assert.ok(sent.includes(PIXEL), "the image reached the model");
  assert.ok(sent.includes("What is in this picture?"));

  // Fork from that message: a new chat without it, the message in the input, the original kept.
  const original = await chat.locator("#app").getAttribute("data-session");
  const pictured = chat.locator(".log > .user", { hasText: "What is in this picture?" });
  await pictured.locator(".message-actions").waitFor({ state: "attached", timeout: 30000 });
  await pictured.hover();
  await pictured.locator("button.fork").click();
  await chat.locator(".notice", { hasText: "Forked" }).waitFor({ timeout: 30000 });
  assert.equal(await chat.locator("textarea.input").inputValue(), "What is in this picture?");
  assert.equal(await chat.locator(".log > .user", { hasText: "What is in this picture?" }).count(), 0);
  assert.notEqual(await chat.locator("#app").getAttribute("data-session"), original, "a new session");
  await shot("forked");

  // On a model that reads no images, a pasted image is refused in place.
  await picker.selectOption("claude-test");
  await chat.locator(".notice", { hasText: "Model: claude-test" }).waitFor({ timeout: 30000 });
  await chat.locator("textarea.input").evaluate((el, data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], "pixel.png", { type: "image/png" }));
    el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
  }, PIXEL);
  await chat.locator(".notice.no-images", { hasText: "claude-test does not take images" }).waitFor({ timeout: 10000 });
  assert.equal(await chat.locator(".attachments .attachment").count(), 0, "nothing attached");
  lap("PASS");
} catch (err) {
  await failed(err, shot, env);
} finally {
  await env.stop();
  await model.stop();
}
