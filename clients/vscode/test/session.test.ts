// The session features of the client layer against the real sema-rpc and the scripted model
// server: models (list, switch), the conversation read back, rewind, fork, turn diffs, cost.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { SemaConnection, SemaError, type ChatSession, type SessionEvent, type TurnDiff } from "../src/client";
import { ScriptedModel, SEMA_RPC, TempHome } from "./support/harness";

let model: ScriptedModel;
let home: TempHome;
let conn: SemaConnection;

/** Two profiles on two providers: which API a request went to says which model was used. */
const MODELS = {
  profiles: {
    fast: {
      provider: "anthropic",
      modelName: "claude-test-fast",
      contextLength: 200000,
      images: false,
    },
    vision: {
      provider: "openai",
      modelName: "gpt-test-vision",
      contextLength: 128000,
      images: true,
      price: { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 },
    },
  },
  pointers: { main: "fast" },
};

async function startServer(): Promise<SemaConnection> {
  const c = await SemaConnection.start({ command: SEMA_RPC, env: home.env(model), cwd: home.workspace });
  await c.initialize("session-test", "0");
  return c;
}

function record(session: ChatSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.onEvent((e) => events.push(e));
  return events;
}

const file = (name: string): string => readFileSync(path.join(home.workspace, name), "utf8");

/** The conversation the model got in the last request, as JSON text. */
async function lastMessages(): Promise<string> {
  return JSON.stringify((await model.requestBodies()).at(-1)?.messages);
}

before(async () => {
  model = await ScriptedModel.start();
  home = new TempHome();
  home.writeModels(MODELS);
  conn = await startServer();
});
after(async () => {
  await conn?.shutdown();
  await model.stop();
  home.remove();
});

describe("session features on the real server", { timeout: 180000 }, () => {
  it("offers the wave's methods in initialize", () => {
    for (const m of ["model/list", "session/setModel", "session/messages", "session/rewind", "session/fork"]) {
      assert.ok(conn.supports(m), `initialize lists ${m}`);
    }
  });

  it("lists the profiles; setModel switches the provider of the next request", async () => {
    await model.reset();
    const { models } = await conn.listModels();
    const fast = models.find((m) => m.name === "fast");
    const vision = models.find((m) => m.name === "vision");
    assert.ok(fast && vision, JSON.stringify(models));
    assert.equal(fast.provider, "anthropic");
    assert.equal(fast.images, false);
    assert.equal(vision.images, true);
    assert.equal(vision.contextLength, 128000);

    const session = await conn.createSession({ workingDir: home.workspace, model: "fast", permissionMode: "bypass" });
    const events = record(session);
    assert.equal((await conn.listModels(session.id)).current, "fast");
    assert.equal(session.ready?.model, "anthropic/claude-test-fast");
    await model.script({ text: "From the fast one." }, { text: "From the vision one." });
    await session.prompt("which model?");
    const switched = await session.setModel("vision");
    assert.equal(switched.model, "vision");
    assert.equal(session.model, "vision");
    await session.prompt("and now?");
    const paths = await model.requestPaths();
    const bodies = await model.requestBodies();
    assert.equal(paths[0], "/v1/messages");
    assert.equal(bodies[0]!.model, "claude-test-fast");
    assert.notEqual(paths[1], "/v1/messages", "the second request went to the OpenAI API");
    assert.equal(bodies[1]!.model, "gpt-test-vision");
    assert.ok(JSON.stringify(bodies[1]!.messages).includes("which model?"), "the conversation went along to the new model");
    assert.ok(events.some((e) => e.method === "model:update" && e.params.model === "vision"));
    await assert.rejects(session.setModel("no-such-profile"), (e: SemaError) => e.code === -32602);
    await session.dispose();
  });

  it("reports turn and session totals; the cost is null without a price and a number with one", async () => {
    await model.reset();
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast" });
    const events = record(session);
    await model.script({ text: "one", usage: [1000, 100] }, { text: "two", usage: [2000, 200] });
    const first = await session.prompt("price?");
    assert.equal(first.session?.costUsd ?? null, null, "no price is known for claude-test-fast");
    assert.equal(first.turn?.inputTokens, 1000);
    await session.setModel("vision");
    const second = await session.prompt("and with a price?");
    assert.equal(second.turn?.inputTokens, 2000);
    assert.equal(second.turn?.outputTokens, 200);
    // 2000 in at $2/M + 200 out at $8/M
    assert.ok(Math.abs((second.turn?.costUsd ?? 0) - (2000 * 2 + 200 * 8) / 1e6) < 1e-9, JSON.stringify(second.turn));
    assert.equal(second.session?.inputTokens, 3000);
    const usage = events.filter((e) => e.method === "conversation:usage").at(-1);
    assert.ok(usage && usage.method === "conversation:usage");
    assert.equal(usage.params.session?.inputTokens, 3000);
    assert.deepEqual(session.totals, usage.params.session);
    await session.dispose();
  });

  it("reads the conversation back after a resume in a new server, ids matching the prompts'", async () => {
    await model.reset();
    const first = await startServer();
    let id: string;
    let promptId: string | null | undefined;
    try {
      const session = await first.createSession({ workingDir: home.workspace, model: "fast", permissionMode: "bypass" });
      id = session.id;
      await model.script(
        { thinking: "Write it.", tools: [["Write", { file_path: "resumed.txt", content: "kept\n" }, "toolu_w1"]] },
        { text: "I wrote resumed.txt." },
      );
      promptId = (await session.prompt("write resumed.txt")).messageId;
      assert.match(promptId ?? "", /^m_/);
      await session.dispose();
    } finally {
      await first.shutdown();
    }
    const again = await startServer();
    try {
      const resumed = await again.createSession({ workingDir: home.workspace, sessionId: id });
      const messages = await resumed.messages();
      const user = messages[0]!;
      assert.equal(user.role, "user");
      assert.equal(user.kind, "prompt");
      assert.equal(user.id, promptId);
      assert.deepEqual(user.content, [{ type: "text", text: "write resumed.txt" }]);
      const call = messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === "toolu_w1");
      assert.ok(call, JSON.stringify(messages));
      assert.equal(call.name, "Write");
      assert.equal(call.status, "completed");
      assert.equal(call.input?.file_path, "resumed.txt");
      const last = messages.at(-1)!;
      assert.equal(last.role, "assistant");
      assert.deepEqual(last.content, [{ type: "text", text: "I wrote resumed.txt." }]);
      assert.ok(messages.every((m) => m.role === "user" || m.role === "assistant"), "tool results are folded into calls");
      await resumed.dispose();
    } finally {
      await again.shutdown();
    }
  });

  it("rewinds files and conversation; a file changed since is a conflict until forced", async () => {
    await model.reset();
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast", permissionMode: "bypass" });
    const events = record(session);
    await model.script(
      { tools: [["Write", { file_path: "rw.txt", content: "one\n" }]] },
      { text: "Wrote one." },
      { tools: [["Write", { file_path: "rw.txt", content: "two\n" }]] },
      { text: "Wrote two." },
    );
    const p1 = (await session.prompt("write one")).messageId!;
    const p2 = (await session.prompt("now write two")).messageId!;
    assert.equal(file("rw.txt"), "two\n");
    const diffs = events.filter((e) => e.method === "turn:diff").map((e) => e.params as TurnDiff);
    assert.equal(diffs.length, 2, "one turn:diff per turn that changed files");
    assert.equal(diffs[0]!.messageId, p1);
    assert.deepEqual(
      diffs[0]!.files.map((f) => [f.path, f.status, f.additions, f.deletions]),
      [["rw.txt", "added", 1, 0]],
    );
    assert.match(diffs[1]!.files[0]!.diff, /-one\n\+two/);
    const before = (await session.messages()).length;

    // The user edits the file after the agent: rewinding over it needs force.
    writeFileSync(path.join(home.workspace, "rw.txt"), "mine\n");
    const refused = await session.rewind(p2, "both");
    assert.equal(refused.rewound, false);
    assert.deepEqual(refused.conflicts?.map((c) => [c.path, c.reason]), [["rw.txt", "modified"]]);
    assert.equal(file("rw.txt"), "mine\n", "nothing changed");
    assert.equal((await session.messages()).length, before);

    const done = await session.rewind(p2, "both", true);
    assert.equal(done.rewound, true);
    assert.deepEqual(done.restoredFiles, ["rw.txt"]);
    assert.equal(done.input, "now write two", "the message comes back for the input box");
    assert.equal(file("rw.txt"), "one\n");
    const after = await session.messages();
    assert.ok(after.length < before);
    assert.ok(!after.some((m) => m.id === p2), "the message and what followed are gone");
    assert.ok(after.some((m) => m.id === p1));

    // The conversation goes on from there: the model no longer sees the rewound turn.
    await model.script({ text: "Fresh start." });
    await session.prompt("carry on");
    const last = await lastMessages();
    assert.ok(last.includes("write one"), "the model sees the first turn");
    assert.ok(!last.includes("now write two"), "and not the rewound one");

    // Rewinding to the first message with "code" only: the file goes, the conversation stays.
    const code = await session.rewind(p1, "code");
    assert.equal(code.rewound, true);
    assert.throws(() => file("rw.txt"), /ENOENT/, "the file the first turn created is removed");
    assert.equal((await session.messages()).at(-1)?.role, "assistant");
    // ...and redo puts it back.
    const redone = await session.redo();
    assert.equal(redone.rewound, true);
    assert.equal(file("rw.txt"), "one\n");
    await assert.rejects(session.redo(), (e: SemaError) => e.code === -32602, "nothing left to redo");
    await session.dispose();
  });

  it("sends image blocks to a model that reads images; a model without them refuses, keeping nothing", async () => {
    await model.reset();
    // a 1x1 PNG
    const data =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast" });
    const input = [
      { type: "image" as const, data, mediaType: "image/png" },
      { type: "text" as const, text: "what is in this picture?" },
    ];
    await assert.rejects(session.prompt(input), (e: SemaError) => e.code === -32602 && /does not take images/.test(e.message));
    assert.equal(await model.requestCount(), 0, "nothing was sent");
    assert.deepEqual(await session.messages(), [], "nothing was kept");
    await session.setModel("vision");
    await model.script({ text: "A single pixel." });
    const result = await session.prompt(input);
    assert.equal(result.stopReason, "end_turn");
    const sent = await lastMessages();
    assert.ok(sent.includes(data), "the image reached the model");
    assert.ok(sent.includes("what is in this picture?"));
    await session.dispose();
  });

  it("forks before a message: a new session with the conversation before it and its text", async () => {
    await model.reset();
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast" });
    await model.script({ text: "First answer." }, { text: "Second answer." }, { text: "Forked answer." });
    const p1 = (await session.prompt("first question")).messageId!;
    const p2 = (await session.prompt("second question")).messageId!;
    const original = await session.messages();
    const { session: fork, input } = await session.fork(p2);
    assert.notEqual(fork.id, session.id);
    assert.equal(input, "second question");
    const forked = await fork.messages();
    assert.deepEqual(
      forked.map((m) => m.content),
      original.slice(0, original.findIndex((m) => m.id === p2)).map((m) => m.content),
    );
    assert.deepEqual(await session.messages(), original, "the original is untouched");
    const events = record(fork);
    await fork.prompt("a different second question");
    const last = await lastMessages();
    assert.ok(last.includes('"first question"'), "the fork has the conversation before the message");
    assert.ok(!last.includes('"second question"'), "and not the message itself");
    assert.ok(events.some((e) => e.method === "message:text:chunk"), "the fork's events reach it");
    await assert.rejects(session.fork("m_notamessage"), (e: SemaError) => e.code === -32602);
    void p1;
    await fork.dispose();
    await session.dispose();
  });
  it("renames a session: session/list shows the new title, an empty one gives back the first prompt's", async () => {
    await model.reset();
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast" });
    await model.script({ text: "Renamed soon." });
    await session.prompt("tidy the parser");
    const listed = async (): Promise<string | null | undefined> =>
      (await conn.request("session/list", { workingDir: home.workspace })).sessions.find((s) => s.sessionId === session.id)?.title;
    assert.deepEqual(await conn.request("session/rename", { sessionId: session.id, title: "Parser clean-up" }), {
      title: "Parser clean-up",
    });
    assert.equal(await listed(), "Parser clean-up");
    assert.deepEqual(await conn.request("session/rename", { sessionId: session.id, title: "" }), { title: "tidy the parser" });
    assert.equal(await listed(), "tidy the parser");
    await session.dispose();
  });

  it("knows the session's sandbox from session:ready and follows setSandbox (sandbox:update)", async () => {
    const session = await conn.createSession({ workingDir: home.workspace, model: "fast" });
    const events = record(session);
    assert.ok(session.sandbox, "session:ready carries the sandbox");
    if (!session.sandbox.available) {
      assert.equal(session.sandbox.mode, "off");
      assert.ok(session.sandbox.reason);
    } else {
      assert.equal(session.sandbox.mode, "workspace-write");
      const state = await session.setSandbox("read-only");
      assert.deepEqual(state, { mode: "read-only", network: false, available: true });
      assert.equal(session.sandbox.mode, "read-only");
      assert.ok(events.some((e) => e.method === "sandbox:update" && e.params.mode === "read-only"));
    }
    await session.dispose();
  });
});
