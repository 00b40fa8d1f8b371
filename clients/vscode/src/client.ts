// The client layer: one sema-rpc process, its JSON-RPC connection, and the sessions on it.
// Nothing here imports `vscode`, so it runs (and is tested) in plain Node.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { lstatSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import {
  CancellationTokenSource,
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type CancellationToken,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import type {
  InitializeResult,
  MethodName,
  Methods,
  NotificationName,
  Notifications,
  PermissionModeUpdateResult,
  SandboxState,
  ServerRequestName,
  ServerRequests,
  SessionCreateParams,
  SessionPromptParams,
  SessionPromptResult,
  SessionReadyParams,
  TokenUsage,
} from "./protocol";
import { NOTIFICATION_NAMES, PROTOCOL_VERSION } from "./protocol";

export type Mode = "Agent" | "Plan";
export type PermissionMode = "default" | "acceptEdits" | "bypass";
export type Delivery = "followUp" | "steer";

/** The wire's shapes for the session features, named from the generated method table. */
export type ModelInfo = Methods["model/list"]["result"]["models"][number];
export type ModelListResult = Methods["model/list"]["result"];
export type SetModelResult = Methods["session/setModel"]["result"];
export type TranscriptMessage = Methods["session/messages"]["result"]["messages"][number];
export type RewindParams = Methods["session/rewind"]["params"];
export type RewindResult = Methods["session/rewind"]["result"];
export type ForkResult = Methods["session/fork"]["result"];
export type PromptInput = SessionPromptParams["input"];
export type TurnDiff = Notifications["turn:diff"];
export type UsageTotals = NonNullable<Notifications["conversation:usage"]["session"]>;

/** Pages of `session/messages` asked for at once (the server's maximum is 1000). */
const MESSAGES_PAGE = 500;

/** One server event as routed to a session: the notification's method and params. */
export type SessionEvent = {
  [K in NotificationName]: { method: K; params: Notifications[K] };
}[NotificationName];

/** What a session answers for the server→client requests addressed to it. */
export interface SessionRequestHandler {
  request<K extends ServerRequestName>(
    method: K,
    params: ServerRequests[K]["params"],
    token: CancellationToken,
  ): Promise<ServerRequests[K]["result"]>;
}

export interface ServerOptions {
  command: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  clientName?: string;
  clientVersion?: string;
  /** Every chunk the server writes to stderr (its log). */
  onStderr?: (text: string) => void;
}

export class SemaError extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Where another sema-rpc process listens: `unix:/abs/path` or `tcp:127.0.0.1:PORT`. */
export type Endpoint = { kind: "unix"; path: string } | { kind: "tcp"; host: string; port: number };

export function parseEndpoint(endpoint: string): Endpoint {
  const colon = endpoint.indexOf(":");
  const kind = endpoint.slice(0, colon);
  const rest = endpoint.slice(colon + 1);
  if (colon > 0 && rest && kind === "unix") return { kind: "unix", path: rest };
  const port = /^\[?([^\]]*)\]?:(\d+)$/.exec(rest);
  if (colon > 0 && kind === "tcp" && port) return { kind: "tcp", host: port[1] || "127.0.0.1", port: Number(port[2]) };
  throw new SemaError(`not an endpoint: ${endpoint} (unix:PATH or tcp:127.0.0.1:PORT)`);
}

/** A unix socket path is connected to only when it is a socket of this user (never followed). */
export function checkSocketPath(path: string): void {
  let info;
  try {
    info = lstatSync(path);
  } catch {
    throw new SemaError(`no server listens on ${path}`);
  }
  if (!info.isSocket()) throw new SemaError(`${path} is not a socket: not connecting`);
  if (process.getuid && info.uid !== process.getuid()) {
    throw new SemaError(`${path} belongs to another user: not connecting`);
  }
}

/** Event-loop turns without a message handled after which the read queue counts as drained. */
const QUIET_ROUNDS = 3;

/** Time allowed to connect to another process's listener. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Time allowed for `shutdown`+`exit` before the process is killed. */
const SHUTDOWN_GRACE_MS = 3000;

export class SemaConnection {
  private readonly sessions = new Map<string, ChatSession>();
  private readonly exitListeners: Array<(code: number | null, signal: string | null) => void> = [];
  private exited = false;
  private exitPromise: Promise<void>;
  private closing = false;
  initializeResult: InitializeResult | undefined;
  /** Messages handled so far (to tell when the read queue has drained). */
  private handled = 0;
  /** `initialize`'s token: what a TCP listener wrote to its token file. */
  token: string | undefined;

  /** `process`: the spawned server; `socket`: a connection to another process's listener. */
  private constructor(
    readonly process: ChildProcess,
    readonly rpc: MessageConnection,
    readonly socket?: Socket,
  ) {
    this.exitPromise = new Promise((resolve) => {
      const exited = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exited) return;
        this.exited = true;
        this.rpc.dispose();
        for (const listener of this.exitListeners) listener(code, signal);
        resolve();
      };
      if (socket) socket.once("close", () => this.afterQueue(() => exited(0, null)));
      else process.once("exit", exited);
    });
    for (const name of NOTIFICATION_NAMES) {
      rpc.onNotification(name, (params: { sessionId?: string }) => {
        this.handled++;
        const session = params.sessionId ? this.sessions.get(params.sessionId) : undefined;
        session?.deliver({ method: name, params } as SessionEvent);
      });
    }
    const serverRequests: ServerRequestName[] = [
      "tool:permission:request",
      "ask:question:request",
      "plan:exit:request",
    ];
    for (const name of serverRequests) {
      rpc.onRequest(name, async (params: { sessionId?: string }, token: CancellationToken) => {
        this.handled++;
        const session = params.sessionId ? this.sessions.get(params.sessionId) : undefined;
        if (!session?.handler) {
          throw new ResponseError(-32603, `no chat answers ${name} for session ${params.sessionId}`);
        }
        return session.handler.request(name, params as never, token);
      });
    }
  }

  /** Spawn the server and connect to its stdio (LSP-style framing). Rejects if it cannot start. */
  static async start(options: ServerOptions): Promise<SemaConnection> {
    const child = spawn(options.command, options.args ?? [], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (err) => reject(new SemaError(`cannot start ${options.command}: ${err.message}`)));
    });
    // A server that logs a lot must never block on a full stderr pipe: always drain it.
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => options.onStderr?.(chunk));
    const rpc = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    rpc.onError(() => undefined);
    child.stdin!.on("error", () => undefined);
    const conn = new SemaConnection(child, rpc);
    rpc.listen();
    return conn;
  }

  /**
   * Connect to a server another process runs (`sema-rpc serve`, `--listen`, `run --listen`):
   * Content-Length framing over a unix socket (only one of this user's) or loopback TCP
   * (then `token` is presented with `initialize`). Its sessions belong to that process:
   * `shutdown()` only closes this connection.
   */
  static async connect(endpoint: string, token?: string): Promise<SemaConnection> {
    const where = parseEndpoint(endpoint);
    if (where.kind === "unix") checkSocketPath(where.path);
    if (where.kind === "tcp" && token === undefined) throw new SemaError(`${endpoint} needs its token`);
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = where.kind === "unix" ? createConnection({ path: where.path }) : createConnection(where);
      const timer = setTimeout(() => {
        s.destroy();
        reject(new SemaError(`cannot connect to ${endpoint}: timed out`));
      }, CONNECT_TIMEOUT_MS);
      s.once("connect", () => {
        clearTimeout(timer);
        resolve(s);
      });
      s.once("error", (err) => {
        clearTimeout(timer);
        reject(new SemaError(`cannot connect to ${endpoint}: ${err.message}`));
      });
    });
    socket.on("error", () => undefined);
    const rpc = createMessageConnection(new StreamMessageReader(socket), new StreamMessageWriter(socket));
    rpc.onError(() => undefined);
    const conn = new SemaConnection(undefined as unknown as ChildProcess, rpc, socket);
    conn.token = token;
    rpc.listen();
    return conn;
  }

  /**
   * Run `then` once the messages already read are dispatched: the connection hands them
   * over one per event-loop turn, and a server that ends right after its last notification
   * (a `run --listen` one-shot) closes the socket before they are all handed over.
   */
  private afterQueue(then: () => void): void {
    let seen = -1;
    let quiet = 0;
    let rounds = 0;
    const check = () => {
      if (this.handled === seen) quiet++;
      else [seen, quiet] = [this.handled, 0];
      if (quiet >= QUIET_ROUNDS || ++rounds > 100_000) then();
      else setImmediate(check);
    };
    setImmediate(check);
  }

  /** A connection to another process's listener (not a server this client spawned). */
  get remote(): boolean {
    return this.socket !== undefined;
  }

  get pid(): number | undefined {
    return this.socket ? undefined : this.process.pid;
  }

  get alive(): boolean {
    return !this.exited;
  }

  onExit(listener: (code: number | null, signal: string | null) => void): void {
    this.exitListeners.push(listener);
  }

  /** The handshake: declares the server→client requests this client answers. */
  async initialize(clientName = "sema-vscode", clientVersion?: string): Promise<InitializeResult> {
    this.initializeResult = await this.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: { name: clientName, version: clientVersion ?? null },
      capabilities: { permissions: true, askQuestion: true, planExit: true },
      ...(this.token !== undefined ? { token: this.token } : {}),
    });
    return this.initializeResult;
  }

  /** Whether the server offers a method (from `initialize`'s `capabilities.methods`). */
  supports(method: string): boolean {
    return this.initializeResult?.capabilities.methods?.includes(method) ?? false;
  }

  async request<M extends MethodName>(
    method: M,
    params: Methods[M]["params"],
    token?: CancellationToken,
  ): Promise<Methods[M]["result"]> {
    if (this.exited) throw new SemaError(`sema-rpc is not running (${method})`);
    try {
      // vscode-jsonrpc reads every argument after the method as a parameter unless it is a
      // token, so an absent token must not be passed at all.
      const answer = token
        ? await this.rpc.sendRequest(method, params, token)
        : await this.rpc.sendRequest(method, params);
      return answer as Methods[M]["result"];
    } catch (err) {
      if (err instanceof ResponseError) throw new SemaError(err.message, err.code, err.data);
      throw new SemaError(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * Create a chat session (or resume `sessionId`). The client names new sessions itself so
   * that the events the server sends before answering (`session:ready`, `todos:update`)
   * already find their session.
   */
  async createSession(
    params: Omit<SessionCreateParams, "sessionId"> & { sessionId?: string },
  ): Promise<ChatSession> {
    const sessionId = params.sessionId ?? `vsc-${randomUUID()}`;
    const session = new ChatSession(this, sessionId, params.workingDir);
    this.sessions.set(sessionId, session);
    try {
      const ready = await this.request("session/create", { ...params, sessionId });
      session.applyReady(ready);
      return session;
    } catch (err) {
      this.sessions.delete(sessionId);
      throw err;
    }
  }

  /**
   * Follow a session this connection's server hosts (`session/attach`): the answer says
   * what it is doing now; its stream follows; an open consent request is sent again.
   * `prepare(session)` runs first (draw the earlier conversation, subscribe), so nothing
   * of the stream arrives before it.
   */
  async attachSession(
    sessionId: string,
    workingDir: string,
    prepare?: (session: ChatSession) => Promise<void>,
  ): Promise<{ session: ChatSession; attach: AttachResult }> {
    const session = new ChatSession(this, sessionId, workingDir);
    this.sessions.set(sessionId, session);
    try {
      // `prepare` runs before the stream starts (the earlier conversation drawn, listeners on).
      if (prepare) await prepare(session);
      const attach = await this.request("session/attach", { sessionId });
      session.applyAttach(attach);
      return { session, attach };
    } catch (err) {
      this.sessions.delete(sessionId);
      throw err;
    }
  }

  /** The models the server offers (its profiles); with a session, `current` is its model. */
  listModels(sessionId?: string): Promise<ModelListResult> {
    return this.request("model/list", sessionId ? { sessionId } : {});
  }

  /**
   * A session the server created (a fork): the client takes it over as if it had created
   * it. Its `session:ready` was sent before this answer, so `ready` is applied here.
   */
  adopt(ready: SessionReadyParams, workingDir: string): ChatSession {
    const session = new ChatSession(this, ready.sessionId, ready.workingDir || workingDir);
    this.sessions.set(ready.sessionId, session);
    session.applyReady(ready);
    return session;
  }

  /** @internal */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** `shutdown` then `exit`; kills the process if it does not exit in time. A connection to
   * another process's listener is only closed: that server and its sessions go on. */
  async shutdown(): Promise<void> {
    if (this.socket) {
      if (!this.exited) this.socket.end();
      const timer = setTimeout(() => this.socket?.destroy(), SHUTDOWN_GRACE_MS);
      await this.exitPromise;
      clearTimeout(timer);
      return;
    }
    if (this.exited || this.closing) return this.exitPromise;
    this.closing = true;
    const timer = setTimeout(() => this.process.kill("SIGKILL"), SHUTDOWN_GRACE_MS);
    try {
      await Promise.race([this.request("shutdown", {}), this.exitPromise]);
      if (!this.exited) await this.rpc.sendNotification("exit");
    } catch {
      this.process.kill("SIGTERM");
    }
    await this.exitPromise;
    clearTimeout(timer);
  }
}

/** `session/attach`'s answer: what the session is doing, its open requests, its last seq. */
export type AttachResult = Methods["session/attach"]["result"];

/** One chat: a session on the server, its events, its requests, its turn state. */
export class ChatSession {
  private readonly listeners: Array<(event: SessionEvent) => void> = [];
  private running = 0;
  private promptTokens = new Set<CancellationTokenSource>();
  handler: SessionRequestHandler | undefined;
  ready: SessionReadyParams | undefined;
  mode: Mode = "Agent";
  permissionMode: PermissionMode = "default";
  usage: TokenUsage | undefined;
  /**
   * The session's model as `model/list` names it, once known (`setModel`, `model:update`,
   * or `model/list`'s `current`); `ready.model` is its `provider/model-id`.
   */
  modelName: string | undefined;
  /** Running totals of the session (tokens and cost), from `conversation:usage`. */
  totals: UsageTotals | undefined;
  /** The OS sandbox its commands run in (`session:ready`, `sandbox:update`). */
  sandbox: SandboxState | undefined;
  disposed = false;

  constructor(
    readonly connection: SemaConnection,
    readonly id: string,
    readonly workingDir: string,
  ) {}

  /** @internal */
  applyReady(ready: SessionReadyParams): void {
    this.ready = ready;
    this.mode = ready.mode ?? this.mode;
    this.permissionMode = ready.permissionMode ?? this.permissionMode;
    this.usage = ready.usage ?? this.usage;
    this.sandbox = ready.sandbox ?? this.sandbox;
  }

  /** @internal What `session/attach` said of a session another client started. */
  applyAttach(attach: AttachResult): void {
    this.mode = (attach.mode as Mode | undefined) ?? this.mode;
    this.permissionMode = (attach.permissionMode as PermissionMode | undefined) ?? this.permissionMode;
    if (attach.model) this.modelName = attach.model;
    this.busy = attach.state === "processing";
  }

  /** The session's turn runs (`state:update`), whoever started it. */
  busy = false;

  /** @internal Called by the connection for every event of this session, in wire order. */
  deliver(event: SessionEvent): void {
    switch (event.method) {
      case "session:ready":
        this.applyReady({ ...event.params, sessionId: this.id });
        break;
      case "mode:update":
        this.mode = event.params.mode;
        break;
      case "state:update":
        this.busy = event.params.state === "processing";
        break;
      case "conversation:usage":
        this.usage = event.params.usage;
        this.totals = event.params.session ?? this.totals;
        break;
      case "model:update":
        this.modelName = event.params.model;
        break;
      case "sandbox:update": {
        const { mode, network, available, reason } = event.params;
        this.sandbox = { mode, network, available, reason };
        break;
      }
    }
    for (const listener of this.listeners) listener(event);
  }

  onEvent(listener: (event: SessionEvent) => void): { dispose(): void } {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) this.listeners.splice(i, 1);
      },
    };
  }

  /** Prompts sent and not answered yet (a follow-up waits behind the running turn). */
  get pending(): number {
    return this.running;
  }

  /** The session's model: its `model/list` name when known, else its `provider/model-id`. */
  get model(): string | null | undefined {
    return this.modelName ?? this.ready?.model;
  }

  /**
   * Send an input (text, or content blocks: text, images, resources); resolves when its
   * turn ends (exactly one answer per prompt). The result's `messageId` names the user
   * message it added: rewind and fork address it.
   */
  async prompt(input: PromptInput, delivery: Delivery = "followUp"): Promise<SessionPromptResult> {
    this.running++;
    const source = new CancellationTokenSource();
    this.promptTokens.add(source);
    try {
      return await this.connection.request(
        "session/prompt",
        { sessionId: this.id, input, delivery },
        source.token,
      );
    } finally {
      this.promptTokens.delete(source);
      source.dispose();
      this.running--;
    }
  }

  /** Stop the running turn (answered at once; the prompt then answers `interrupted`). */
  async interrupt(): Promise<boolean> {
    const result = await this.connection.request("session/interrupt", { sessionId: this.id });
    return result.interrupted;
  }

  async setMode(mode: Mode): Promise<Mode> {
    const result = await this.connection.request("mode/update", { sessionId: this.id, mode });
    this.mode = result.mode;
    return result.mode;
  }

  /** `session/setSandbox`: the next command runs in `mode` (a `sandbox:update` follows). */
  async setSandbox(mode: SandboxState["mode"]): Promise<SandboxState> {
    const result: SandboxState = await this.connection.request("session/setSandbox", { sessionId: this.id, mode });
    this.sandbox = result;
    return result;
  }

  async setPermissionMode(permissionMode: PermissionMode): Promise<PermissionMode> {
    const result: PermissionModeUpdateResult = await this.connection.request("permissionMode/update", {
      sessionId: this.id,
      permissionMode,
    });
    this.permissionMode = result.permissionMode;
    return result.permissionMode;
  }

  /** Switch the model (a profile name from `model/list`); used from the next model call. */
  async setModel(model: string, thinking?: boolean): Promise<SetModelResult> {
    const result = await this.connection.request("session/setModel", {
      sessionId: this.id,
      model,
      ...(thinking === undefined ? {} : { thinking }),
    });
    this.modelName = result.model;
    return result;
  }

  /** The whole conversation as the server keeps it, oldest first (all pages). */
  async messages(): Promise<TranscriptMessage[]> {
    const all: TranscriptMessage[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.connection.request("session/messages", {
        sessionId: this.id,
        limit: MESSAGES_PAGE,
        ...(cursor ? { cursor } : {}),
      });
      all.push(...page.messages);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  /**
   * Go back to just before the user message `messageId`: its files (`code`), the
   * conversation, or both. With conflicts (files changed since) and no `force`, nothing
   * changes: the result says `rewound: false` and lists them.
   */
  rewind(
    messageId: string,
    restore: "code" | "conversation" | "both" = "both",
    force = false,
  ): Promise<RewindResult> {
    return this.connection.request("session/rewind", { sessionId: this.id, messageId, restore, force });
  }

  /** Undo the last rewind. */
  redo(force = false): Promise<RewindResult> {
    return this.connection.request("session/rewind", { sessionId: this.id, redo: true, force });
  }

  /**
   * A new session holding the conversation just before `messageId` (the whole one without
   * it); this one is untouched. `input` is that message's text, to prefill the input.
   */
  async fork(messageId?: string): Promise<{ session: ChatSession; input?: string | null }> {
    const result: ForkResult = await this.connection.request("session/fork", {
      sessionId: this.id,
      ...(messageId ? { messageId } : {}),
    });
    return { session: this.connection.adopt(result, this.workingDir), input: result.input };
  }

  async listCommands() {
    return (await this.connection.request("command/list", { workingDir: this.workingDir })).commands;
  }

  /** Drop the session from the server (its history stays on disk and can be resumed). A
   * session another process hosts is left running: this client detaches and disconnects. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (this.connection.remote) {
      try {
        if (this.connection.alive) await this.connection.request("session/detach", { sessionId: this.id });
      } catch {
        // Gone already: nothing to detach from.
      }
      this.connection.forget(this.id);
      await this.connection.shutdown();
      return;
    }
    try {
      if (this.connection.alive) await this.connection.request("session/dispose", { sessionId: this.id });
    } catch {
      // The server may be gone or already have forgotten the session: nothing to undo.
    } finally {
      this.connection.forget(this.id);
    }
  }
}
