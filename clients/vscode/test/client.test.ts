// The client layer against the real sema-rpc and the scripted model server (no VS Code).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { SemaConnection, SemaError, type ChatSession, type SessionEvent } from "../src/client";
import type { PermissionRequestParams } from "../src/protocol";
import { MODEL, SEMA_RPC, ScriptedModel, TempHome, waitFor } from "./support/harness";

let model: ScriptedModel;
let home: TempHome;
let stderr = "";

async function startServer(): Promise<SemaConnection> {
  const conn = await SemaConnection.start({
    command: SEMA_RPC,
    env: home.env(model),
    cwd: home.workspace,
    onStderr: (t) => (stderr += t),
  });
  try {
    await conn.initialize("client-test", "0");
  } catch (err) {
    conn.process.kill("SIGKILL");
    throw err;
  }
  return conn;
}

function record(session: ChatSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.onEvent((e) => events.push(e));
  return events;
}

function texts(events: SessionEvent[]): string {
  return events.map((e) => (e.method === "message:text:chunk" ? e.params.delta : "")).join("");
}

let shared: SemaConnection;

before(async () => {
  model = await ScriptedModel.start();
  home = new TempHome();
  shared = await startServer();
});
after(async () => {
  await shared?.shutdown();
  await model.stop();
  home.remove();
});

describe("SemaConnection and ChatSession on the real server", { timeout: 180000 }, () => {
  it("initializes, creates a session, streams a turn and routes events by session", async () => {
    await model.reset();
    const conn = await startServer();
    try {
      const init = conn.initializeResult!;
      assert.equal(init.serverInfo.name, "sema-rpc");
      assert.ok(conn.supports("session/prompt"));
      assert.ok(!conn.supports("no/such-method"));
      assert.ok(init.capabilities.serverRequests.includes("tool:permission:request"));

      const a = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      const b = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      assert.notEqual(a.id, b.id);
      assert.equal(a.ready?.model, MODEL);
      const ea = record(a);
      const eb = record(b);
      await model.script({ text: "Alpha answer streamed in parts.", chunks: 6 });
      const result = await a.prompt("first");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(texts(ea), "Alpha answer streamed in parts.");
      assert.equal(ea.filter((e) => e.method === "message:text:chunk").length, 6);
      assert.deepEqual(
        ea.filter((e) => e.method === "state:update").map((e) => (e.method === "state:update" ? e.params.state : "")),
        ["processing", "idle"],
      );
      assert.ok(ea.every((e) => e.params.sessionId === a.id));
      assert.equal(eb.length, 0, "the other session saw none of these events");
      assert.ok(a.usage && (a.usage.useTokens ?? 0) > 0, "usage follows conversation:usage");
    } finally {
      await conn.shutdown();
    }
    assert.equal(conn.process.exitCode, 0, "shutdown + exit ends the process with 0");
  });

  it("answers a Write permission inline: the diff arrives, allow_once writes the file", async () => {
    await model.reset();
    const conn = shared;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      const asked: PermissionRequestParams[] = [];
      session.handler = {
        async request(method, params) {
          assert.equal(method, "tool:permission:request");
          asked.push(params as PermissionRequestParams);
          return { decision: "allow_once" } as never;
        },
      };
      await model.script(
        { tools: [["Write", { file_path: "notes.txt", content: "hello\n" }]] },
        { text: "Written." },
      );
      const events = record(session);
      const result = await session.prompt("write notes");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(readFileSync(path.join(home.workspace, "notes.txt"), "utf8"), "hello\n");
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.toolName, "Write");
      assert.equal(asked[0]!.contentKind, "diff");
      assert.match(asked[0]!.content, /\+hello/);
      const order = events
        .filter((e) => e.method.startsWith("tool:execution"))
        .map((e) => e.method);
      assert.deepEqual(order, ["tool:execution:start", "tool:execution:complete"]);
    } finally {
      // the shared server lives on
    }
  });

  it("reject with feedback keeps the turn going; the file is not written", async () => {
    await model.reset();
    const conn = shared;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      session.handler = {
        async request() {
          return { decision: "reject", feedback: "use docs/ instead" } as never;
        },
      };
      await model.script(
        { tools: [["Write", { file_path: "rejected.txt", content: "no\n" }]] },
        { text: "Understood." },
      );
      const result = await session.prompt("write it");
      assert.equal(result.stopReason, "end_turn");
      assert.ok(!existsSync(path.join(home.workspace, "rejected.txt")));
      const bodies = await model.requestBodies();
      assert.match(JSON.stringify(bodies.at(-1)), /use docs\/ instead/);
    } finally {
      // the shared server lives on
    }
  });

  it("interrupt stops a streaming turn; a pending permission request is cancelled by the server", async () => {
    await model.reset();
    const conn = shared;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      const events = record(session);
      await model.script({ deltas: 400, delay_s: 0.02 });
      const answer = session.prompt("long");
      await waitFor(() => events.some((e) => e.method === "message:text:chunk"), 10000, "first chunk");
      assert.equal(await session.interrupt(), true);
      const result = await answer;
      assert.equal(result.stopReason, "interrupted");
      assert.ok(events.some((e) => e.method === "session:interrupted"));

      // A permission the user has not answered yet is withdrawn by the interrupt.
      let cancelled = false;
      let asked = false;
      session.handler = {
        request(_method, _params, token) {
          asked = true;
          return new Promise((resolve) => {
            token.onCancellationRequested(() => {
              cancelled = true;
              resolve({ decision: "reject" } as never);
            });
          });
        },
      };
      await model.script({ tools: [["Write", { file_path: "later.txt", content: "x\n" }]] });
      const second = session.prompt("write later");
      await waitFor(() => asked, 10000, "permission request");
      await session.interrupt();
      assert.equal((await second).stopReason, "interrupted");
      await waitFor(() => cancelled, 5000, "$/cancelRequest of the permission");
      assert.ok(!existsSync(path.join(home.workspace, "later.txt")));
    } finally {
      // the shared server lives on
    }
  });

  it("a follow-up waits for the running turn; a steer joins it", async () => {
    await model.reset();
    const conn = shared;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL, permissionMode: "bypass" });
      const events = record(session);
      await model.script(
        { tools: [["Read", { file_path: "README.md" }]], gate: "g1" },
        { text: "Turn one done." },
        { text: "Follow-up done." },
      );
      const first = session.prompt("read the readme");
      await waitFor(() => events.some((e) => e.method === "state:update"), 10000, "turn start");
      const steer = session.prompt("and be brief", "steer");
      const followUp = session.prompt("then summarise", "followUp");
      assert.equal(session.pending, 3);
      await model.open("g1");
      const [r1, rs, rf] = await Promise.all([first, steer, followUp]);
      assert.equal(r1.stopReason, "end_turn");
      assert.equal(rs.stopReason, "end_turn");
      assert.equal(rf.stopReason, "end_turn");
      const bodies = await model.requestBodies();
      assert.equal(bodies.length, 3);
      assert.match(JSON.stringify(bodies[1]), /and be brief/, "the steer reached the running turn's next call");
      assert.match(JSON.stringify(bodies[2]), /then summarise/);
      assert.equal(texts(events), "Turn one done.Follow-up done.");
    } finally {
      // the shared server lives on
    }
  });

  it("lists the sessions of the project and resumes one with its history", async () => {
    await model.reset();
    const conn = await startServer();
    let id: string;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      id = session.id;
      await model.script({ text: "Remembered." });
      await session.prompt("remember the resume test");
      await session.dispose();
    } finally {
      await conn.shutdown();
    }
    const again = await startServer();
    try {
      const { sessions } = await again.request("session/list", { workingDir: home.workspace });
      const item = sessions.find((s) => s.sessionId === id);
      assert.ok(item, "the session is listed");
      assert.equal(item.title, "remember the resume test");
      const resumed = await again.createSession({ workingDir: home.workspace, model: MODEL, sessionId: id });
      assert.equal(resumed.ready?.historyLoaded, true);
      await model.script({ text: "Still here." });
      await resumed.prompt("and now?");
      const bodies = await model.requestBodies();
      assert.match(JSON.stringify(bodies.at(-1)), /remember the resume test/, "the model sees the old history");
    } finally {
      await again.shutdown();
    }
  });

  it("reports a server that dies: exit listeners run and pending prompts reject", async () => {
    await model.reset();
    const conn = await startServer();
    const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
    await model.script({ deltas: 400, delay_s: 0.05 });
    const events = record(session);
    const answer = session.prompt("long");
    let exit: [number | null, string | null] | undefined;
    conn.onExit((code, signal) => (exit = [code, signal]));
    await waitFor(() => events.some((e) => e.method === "message:text:chunk"), 10000, "first chunk");
    conn.process.kill("SIGKILL");
    await assert.rejects(answer);
    await waitFor(() => exit !== undefined, 5000, "exit");
    assert.equal(exit![1], "SIGKILL");
    assert.equal(conn.alive, false);
    await assert.rejects(session.interrupt(), SemaError);
  });

  it("gives a clear error when the executable does not exist", async () => {
    await assert.rejects(
      SemaConnection.start({ command: path.join(home.root, "no-such-sema-rpc") }),
      (err: Error) => err instanceof SemaError && /cannot start .*no-such-sema-rpc/.test(err.message),
    );
  });

  it("a provider error ends the turn with stopReason error and a session:error event", async () => {
    await model.reset();
    const session = await shared.createSession({ workingDir: home.workspace, model: MODEL });
    const events = record(session);
    await model.script({ error: 400, message: "bad request from the test" });
    const result = await session.prompt("fail please");
    assert.equal(result.stopReason, "error");
    const error = events.find((e) => e.method === "session:error");
    assert.ok(error && error.method === "session:error");
    assert.match(JSON.stringify(error.params.error), /bad request from the test/);
    await session.dispose();
  });

  it("switches Agent/Plan and the permission mode; the session follows mode:update", async () => {
    const session = await shared.createSession({ workingDir: home.workspace, model: MODEL });
    const events = record(session);
    assert.equal(session.mode, "Agent");
    assert.equal(await session.setMode("Plan"), "Plan");
    await waitFor(() => events.some((e) => e.method === "mode:update"), 5000, "mode:update");
    assert.equal(session.mode, "Plan");
    assert.equal(await session.setPermissionMode("acceptEdits"), "acceptEdits");
    assert.equal(session.permissionMode, "acceptEdits");
    await session.dispose();
    await assert.rejects(shared.request("session/interrupt", { sessionId: session.id }), (e: SemaError) => e.code === -32010);
  });

  it("lists custom commands for / completion", async () => {
    const { mkdirSync, writeFileSync } = await import("node:fs");
    mkdirSync(path.join(home.workspace, ".sema/commands"), { recursive: true });
    writeFileSync(path.join(home.workspace, ".sema/commands/review.md"), "---\ndescription: Review a file\n---\nReview $ARGUMENTS\n");
    const conn = shared;
    try {
      const session = await conn.createSession({ workingDir: home.workspace, model: MODEL });
      const commands = await session.listCommands();
      const review = commands.find((c) => c.name === "review");
      assert.equal(review?.description, "Review a file");
      assert.equal(review?.source, "project");
    } finally {
      // the shared server lives on
    }
  });
});

void stderr;
