// Attaching to a session another process hosts, with the client layer the extension uses
// (no VS Code): the real sema-rpc started with `--listen unix` by its own stdio client,
// found through $SEMA_ROOT/run, a socket connection that draws the earlier conversation,
// approves the Write the session waits for, and follows the rest of the turn.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { SemaConnection, type SessionEvent, type TranscriptMessage } from "../src/client";
import { allLiveSessions, discoverServers, type LiveSession, runDir } from "../src/endpoints";
import { MODEL, SEMA_RPC, ScriptedModel, TempHome, waitFor } from "./support/harness";

let model: ScriptedModel;
let home: TempHome;

before(async () => {
  model = await ScriptedModel.start();
  home = new TempHome();
});
after(async () => {
  await model.stop();
  home.remove();
});

describe("Attach to a running session", { timeout: 180000 }, () => {
  it("finds the live session, draws its conversation, answers its consent and follows its turn", async () => {
    await model.script(
      { text: "The answer is 42." },
      { tools: [["Write", { file_path: "notes.txt", content: "hello\n" }]] },
      { text: "Written the notes." },
    );
    let stderr = "";
    const owner = await SemaConnection.start({
      command: SEMA_RPC,
      args: ["--listen", "unix"],
      env: home.env(model),
      cwd: home.workspace,
      onStderr: (t) => (stderr += t),
    });
    try {
      await owner.initialize("owner", "0");
      const session = await owner.createSession({ workingDir: home.workspace, model: MODEL });
      // The owner sees the consent request too, and never answers it: it is told when
      // the other client's answer wins (its request is cancelled).
      let ownerAsked = 0;
      let ownerCancelled = false;
      session.handler = {
        request: (_method, _params, token) => {
          ownerAsked++;
          return new Promise((resolve) =>
            token.onCancellationRequested(() => {
              ownerCancelled = true;
              resolve({ decision: "reject" } as never);
            }),
          );
        },
      };
      await session.prompt("What is the answer?");
      const writing = session.prompt("write notes");
      await waitFor(() => ownerAsked === 1, 60000, "the Write's consent request");

      const servers = discoverServers(runDir({ SEMA_ROOT: home.semaRoot }));
      assert.deepEqual(
        servers.map((s) => s.pid),
        [owner.pid],
        stderr,
      );
      const { sessions, problems } = await allLiveSessions(servers, "lister");
      assert.deepEqual(problems, []);
      const [live] = sessions.filter((s) => s.sessionId === session.id);
      assert.equal(live.title, "What is the answer?");
      assert.equal(live.state, "processing");

      const conn = await SemaConnection.connect(servers[0].endpoint);
      await conn.initialize("attach-test", "0");
      let history: TranscriptMessage[] = [];
      const events: SessionEvent[] = [];
      const asked: unknown[] = [];
      const { session: attached, attach } = await conn.attachSession(live.sessionId, home.workspace, async (s) => {
        history = await s.messages();
        s.onEvent((e) => events.push(e));
        s.handler = {
          request: async (_method, params) => {
            asked.push(params);
            return { decision: "allow_once" } as never;
          },
        };
      });
      assert.equal(attach.state, "processing");
      assert.equal(attach.pendingRequests?.length, 1);
      assert.deepEqual(
        history.map((m) => [m.role, m.content?.[0]?.text]),
        [
          ["user", "What is the answer?"],
          ["assistant", "The answer is 42."],
          ["user", "write notes"],
          ["assistant", undefined],
        ],
      );

      const answer = await writing;
      assert.equal(answer.stopReason, "end_turn");
      assert.equal(readFileSync(path.join(home.workspace, "notes.txt"), "utf8"), "hello\n");
      assert.equal(asked.length, 1);
      await waitFor(() => ownerCancelled, 10000, "the owner's request withdrawn");
      await waitFor(() => events.some((e) => e.method === "state:update" && e.params.state === "idle"), 10000);
      const text = events.map((e) => (e.method === "message:text:chunk" ? e.params.delta : "")).join("");
      assert.equal(text, "Written the notes.");
      const resolved = events.filter((e) => e.method === "request:resolved");
      assert.deepEqual(
        resolved.map((e) => (e.params as { answeredBy?: string }).answeredBy),
        ["attach-test"],
      );
      const seqs = events.map((e) => e.params.seq ?? 0);
      assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b));

      // Closing the chat detaches and disconnects: the session goes on in the owner's server.
      await attached.dispose();
      assert.equal(conn.alive, false);
      const listed = await owner.request("session/list", {});
      const entry = listed.sessions.find((s) => s.sessionId === session.id) as { live?: boolean } | undefined;
      assert.equal(entry?.live, true);
      assert.ok(existsSync(path.join(home.semaRoot, "run", `${owner.pid}.json`)));
    } finally {
      await owner.shutdown();
    }
  });

  it("follows a run --listen one-shot to the end of a 3,000-delta burst its server exits right after", async () => {
    await model.reset();
    await model.script(
      { tools: [["Write", { file_path: "later.txt", content: "later\n" }]] },
      { deltas: 3000 },
    );
    const run = spawn(
      SEMA_RPC,
      ["run", "--format", "text", "--model", MODEL, "--cwd", home.workspace, "--listen", "unix", "write later"],
      { env: home.env(model), stdio: ["ignore", "ignore", "pipe"] },
    );
    const runExit = new Promise<number | null>((resolve) => run.once("exit", resolve));
    try {
      await waitFor(
        () => readdirSync(path.join(home.semaRoot, "run")).includes(`${run.pid}.json`),
        30000,
        "the one-shot's endpoint file",
      );
      const [server] = discoverServers(runDir({ SEMA_ROOT: home.semaRoot })).filter((s) => s.pid === run.pid);
      // The endpoint file is written once the listener is up; the session is created a
      // moment later, so a client that comes that early finds the server with no session.
      let sessions: LiveSession[] = [];
      for (const deadline = Date.now() + 30000; sessions.length === 0; ) {
        ({ sessions } = await allLiveSessions([server], "lister"));
        if (sessions.length === 0) {
          assert.ok(Date.now() < deadline, "the one-shot's session is listed");
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      const conn = await SemaConnection.connect(server.endpoint);
      await conn.initialize("attach-test", "0");
      const events: SessionEvent[] = [];
      const closed = new Promise<void>((resolve) => conn.onExit(() => resolve()));
      await conn.attachSession(sessions[0].sessionId, home.workspace, async (s) => {
        s.onEvent((e) => events.push(e));
        s.handler = { request: async () => ({ decision: "allow_once" }) as never };
      });
      assert.equal(await runExit, 0);
      await closed;
      const text = events.map((e) => (e.method === "message:text:chunk" ? e.params.delta : "")).join("");
      // every delta of the burst the one-shot streamed just before it exited
      assert.equal(text, Array.from({ length: 3000 }, (_, i) => `w${i} `).join(""));
      assert.ok(events.some((e) => e.method === "state:update" && e.params.state === "idle"));
    } finally {
      if (run.exitCode === null) run.kill("SIGTERM");
    }
  });
});
