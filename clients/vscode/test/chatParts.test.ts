// The chat view's parts that need no editor: the batched outbox to the webview, the
// webview's document and CSP, the `@`/`/` completions, and the inline server requests.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc";
import { BUILTIN_COMMANDS, completions, fileGlob, fileItems } from "../src/completions";
import { InlineRequests } from "../src/inlineRequests";
import type { ToWebview } from "../src/messages";
import { FLUSH_MS, WebviewOutbox } from "../src/outbox";
import type { PermissionRequestParams } from "../src/protocol";
import { webviewHtml } from "../src/webviewHtml";

const chunk = (delta: string, agentId = "main"): ToWebview => ({
  type: "event",
  method: "message:text:chunk",
  params: { agentId, delta },
});
const tick = (ms = FLUSH_MS * 3) => new Promise((r) => setTimeout(r, ms));

describe("WebviewOutbox", () => {
  it("holds everything until the webview listens, then sends one batch, the ready message first", async () => {
    const sent: ToWebview[] = [];
    const outbox = new WebviewOutbox((batch) => (sent.push(batch), true));
    outbox.post({ type: "notice", message: "early" });
    await tick();
    assert.deepEqual(sent, [], "nothing is sent before the webview's script listens");
    outbox.ready({ type: "server", state: "ready" });
    outbox.flush();
    assert.deepEqual(sent, [
      { type: "batch", items: [{ type: "server", state: "ready" }, { type: "notice", message: "early" }] },
    ]);
    outbox.dispose();
  });

  it("merges consecutive text deltas of one agent, not of two", async () => {
    const sent: ToWebview[] = [];
    const outbox = new WebviewOutbox((batch) => (sent.push(batch), true));
    outbox.ready({ type: "notice", message: "hi" });
    outbox.post(chunk("Hel"));
    outbox.post(chunk("lo"));
    outbox.post(chunk("sub", "agent-1"));
    outbox.post(chunk("!"));
    await tick();
    assert.equal(sent.length, 1, "one batch within the flush interval");
    const items = (sent[0] as Extract<ToWebview, { type: "batch" }>).items;
    assert.deepEqual(
      items.slice(1).map((m) => (m.type === "event" ? [m.params.agentId, (m.params as { delta: string }).delta] : m.type)),
      [
        ["main", "Hello"],
        ["agent-1", "sub"],
        ["main", "!"],
      ],
    );
    outbox.dispose();
  });

  it("keeps the queue while there is no webview to take it", () => {
    let view = false;
    const sent: ToWebview[] = [];
    const outbox = new WebviewOutbox((batch) => (view ? (sent.push(batch), true) : false));
    outbox.ready({ type: "notice", message: "one" });
    outbox.flush();
    view = true;
    outbox.post({ type: "notice", message: "two" });
    outbox.flush();
    assert.equal(sent.length, 1);
    assert.deepEqual((sent[0] as Extract<ToWebview, { type: "batch" }>).items.map((m) => m.type === "notice" && m.message), [
      "one",
      "two",
    ]);
    outbox.dispose();
  });
});

describe("webviewHtml", () => {
  it("runs only the bundled script, by a nonce the CSP names, and loads nothing else", () => {
    const html = webviewHtml("vscode-webview://abc", "vscode-webview://abc/out/webview.js", "vscode-webview://abc/out/webview-style.css");
    const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1] ?? "";
    const scriptNonce = /<script nonce="([A-Za-z0-9]+)" src="vscode-webview:\/\/abc\/out\/webview.js">/.exec(html)?.[1];
    assert.ok(scriptNonce && scriptNonce.length >= 32, "the script tag carries a nonce");
    assert.ok(csp.split("; ").includes("default-src 'none'"));
    assert.ok(csp.split("; ").includes(`script-src 'nonce-${scriptNonce}'`));
    assert.ok(csp.split("; ").includes("style-src vscode-webview://abc"), "no inline style");
    assert.equal((html.match(/<script/g) ?? []).length, 1, "one script, no inline one");
    const again = /<script nonce="([A-Za-z0-9]+)"/.exec(webviewHtml("x", "s", "t"))?.[1];
    assert.notEqual(again, scriptNonce, "every document gets its own nonce");
  });
});

describe("completions", () => {
  it("offers files shortest path first (ties alphabetically), relative to the folder, quoted when they hold spaces", () => {
    const items = fileItems(["/ws/src/deep/app.py", "/ws/app.py", "/ws/my notes/app.md"], "/ws");
    assert.deepEqual(
      items.map((i) => [i.label, i.insert]),
      [
        ["app.py", "@app.py "],
        ["my notes/app.md", '@"my notes/app.md" '],
        ["src/deep/app.py", "@src/deep/app.py "],
      ],
    );
  });

  it("searches the query as a substring of the path, glob characters dropped", () => {
    assert.equal(fileGlob(""), "**/*");
    assert.equal(fileGlob("a*[b]{c}?"), "**/*abc*");
  });

  it("lists the built-in commands, then the project's, by prefix; no server still lists the built-ins", async () => {
    const sources = (listCommands: () => Promise<{ name: string; description?: string; argumentHint?: string }[] | undefined>) => ({
      base: "/ws",
      findFiles: async () => [],
      listCommands: listCommands as never,
    });
    const all = await completions("command", "", sources(async () => [{ name: "review", description: "Review a PR", argumentHint: "<pr>" }]));
    assert.deepEqual(
      all.map((c) => [c.label, c.detail, c.insert]),
      [...BUILTIN_COMMANDS.map((c) => [c.label, c.detail, c.insert]), ["/review", "<pr> — Review a PR", "/review "]],
    );
    const c = await completions("command", "c", sources(async () => [{ name: "review" }]));
    assert.deepEqual(c.map((i) => i.label), ["/clear", "/compact"]);
    const down = await completions("command", "", sources(async () => Promise.reject(new Error("no server"))));
    assert.deepEqual(down.map((i) => i.label), ["/clear", "/compact"]);
  });

  it("asks the editor's file search with the glob, the excluded folders and a bound", async () => {
    const asked: unknown[] = [];
    const items = await completions("file", "ap", {
      base: "/ws",
      findFiles: async (...args) => (asked.push(args), ["/ws/app.py"]),
      listCommands: async () => undefined,
    });
    assert.deepEqual(asked, [["**/*ap*", "**/{node_modules,.git,.venv,out,dist}/**", 50]]);
    assert.deepEqual(items.map((i) => i.insert), ["@app.py "]);
  });
});

describe("InlineRequests", () => {
  const permission: PermissionRequestParams = {
    toolCallId: "toolu_1",
    toolName: "Write",
    title: "Create a.txt",
    input: { file_path: "a.txt", content: "x" },
    content: "+x",
    options: ["allow_once", "reject"],
  };

  it("draws a card, resolves with the answer given there, and ignores a second answer", async () => {
    const posted: ToWebview[] = [];
    let next = 7;
    const requests = new InlineRequests(() => next++, (m) => posted.push(m));
    const answer = requests.ask("tool:permission:request", permission, new CancellationTokenSource().token);
    assert.deepEqual(posted, [{ type: "permission", id: 7, params: permission, canDiff: true }]);
    assert.equal(requests.permission(7)?.toolCallId, "toolu_1", "Show diff finds the request");
    requests.answer(7, { decision: "allow_once" });
    requests.answer(7, { decision: "reject" });
    assert.deepEqual(await answer, { decision: "allow_once" });
    assert.equal(requests.permission(7), undefined, "answered: no longer open");
  });

  it("a request the server cancels is withdrawn and refused", async () => {
    const posted: ToWebview[] = [];
    const requests = new InlineRequests(() => 1, (m) => posted.push(m));
    const source = new CancellationTokenSource();
    const answer = requests.ask("tool:permission:request", { ...permission, toolName: "Bash", input: { command: "ls" } }, source.token);
    source.cancel();
    assert.deepEqual(await answer, { decision: "reject" });
    assert.deepEqual(posted.map((m) => m.type), ["permission", "requestCancelled"]);
    assert.equal((posted[0] as Extract<ToWebview, { type: "permission" }>).canDiff, false, "no diff for a command");
  });

  it("withdraws every open card when the server that asked is gone", async () => {
    const posted: ToWebview[] = [];
    let next = 1;
    const requests = new InlineRequests(() => next++, (m) => posted.push(m));
    const token = new CancellationTokenSource().token;
    const first = requests.ask("tool:permission:request", permission, token);
    const second = requests.ask("tool:permission:request", { ...permission, toolCallId: "toolu_2" }, token);
    requests.withdrawAll();
    assert.deepEqual(await Promise.all([first, second]), [{ decision: "reject" }, { decision: "reject" }]);
    assert.deepEqual(
      posted.filter((m) => m.type === "requestCancelled"),
      [
        { type: "requestCancelled", id: 1 },
        { type: "requestCancelled", id: 2 },
      ],
    );
  });
});
