// The chat view: a webview in Sema's activity-bar container, one session per chat.
import { appendFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { CancellationToken } from "vscode-jsonrpc";
import {
  SemaError,
  type AttachResult,
  type ChatSession,
  type ModelInfo,
  type PromptInput,
  type SemaConnection,
  type SessionEvent,
  type TurnDiff,
} from "./client";
import { showProposedDiff, type ProposedContentProvider } from "./diff";
import { SandboxStatusBar } from "./sandboxStatus";
import { readText, resolveInWorkspace, reversePatch } from "./util";
import {
  exhaustive,
  type ChatState,
  type Completion,
  type Features,
  type FromWebview,
  type ImageAttachment,
  type Mode,
  type PermissionMode,
  type RequestAnswer,
  type RestoreWhat,
  type ToWebview,
  type WireEvent,
} from "./messages";
import type { PermissionRequestParams, ServerRequestName, ServerRequests } from "./protocol";
import type { ServerManager } from "./server";
import { ignoredNotice, permissionModeSetting } from "./trust";

/** Host→webview messages are sent in batches at most this often (streaming never floods it). */
const FLUSH_MS = 16;
const BUILTIN_COMMANDS: Completion[] = [
  { label: "/clear", detail: "Start over with an empty context", insert: "/clear" },
  { label: "/compact", detail: "Summarise the conversation now", insert: "/compact " },
];

interface PendingRequest {
  method: ServerRequestName;
  params: ServerRequests[ServerRequestName]["params"];
  resolve: (result: RequestAnswer) => void;
}

/** Append `next`'s delta to `last` when both are text (or thinking) chunks of one agent. */
function mergeDelta(last: WireEvent, next: WireEvent): boolean {
  if (next.method !== "message:text:chunk" && next.method !== "message:thinking:chunk") return false;
  if (last.method !== next.method || last.params.agentId !== next.params.agentId) return false;
  last.params = { ...last.params, delta: String(last.params.delta) + String(next.params.delta) };
  return true;
}

function nonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "sema.chat";
  private view: vscode.WebviewView | undefined;
  /** Messages wait until the webview's script listens (anything posted earlier is lost). */
  private webviewReady = false;
  private queue: ToWebview[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private session: ChatSession | undefined;
  private readonly sandboxBar = new SandboxStatusBar();
  private sessionListener: { dispose(): void } | undefined;
  private creating: Promise<ChatSession> | undefined;
  private readonly requests = new Map<number, PendingRequest>();
  private nextRequestId = 1;
  private mode: Mode = "Agent";
  private permissionMode: PermissionMode;
  /** The folder's sema.permissionMode that Restricted Mode ignores (said in the chat). */
  private ignoredPermissionMode: PermissionMode | undefined;
  private title: string | undefined;
  private disposables: vscode.Disposable[] = [];
  /** Bench hooks: when set, figures are appended to this file as JSON lines. */
  private readonly benchFile = process.env.SEMA_VSCODE_BENCH_FILE;
  private sentAt = 0;
  private readonly turnDiffs = new Map<number, TurnDiff>();
  /** `model/list`'s answer (empty when the server has no such method). */
  private models: ModelInfo[] = [];
  private turnDeltas = 0;
  private firstChunkAt = 0;
  private turnEndAt = 0;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly server: ServerManager,
    private readonly proposed: ProposedContentProvider,
  ) {
    const setting = permissionModeSetting();
    this.permissionMode = setting.mode;
    this.ignoredPermissionMode = setting.ignored;
    this.disposables.push(
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        // Trusted now: the folder's setting applies to new chats.
        const granted = permissionModeSetting();
        if (this.ignoredPermissionMode !== undefined && !this.session) this.permissionMode = granted.mode;
        if (this.ignoredPermissionMode !== undefined) {
          this.post({
            type: "notice",
            message: `This folder is trusted now: its sema.permissionMode "${granted.mode}" applies to new chats.`,
          });
        }
        this.ignoredPermissionMode = undefined;
        this.postState();
      }),
      server.onDidChangeState.event(({ state, message }) => {
        if (state !== "stopped") this.post({ type: "server", state, message });
      }),
      server.onDidRestart.event((conn) => void this.reattach(conn)),
    );
  }

  private get workingDir(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.webviewReady = false;
    const media = vscode.Uri.joinPath(this.context.extensionUri, "out");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((msg: FromWebview) => void this.onMessage(msg), undefined, this.disposables);
    view.onDidDispose(
      () => {
        this.view = undefined;
        this.webviewReady = false;
      },
      undefined,
      this.disposables,
    );
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const n = nonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "webview-style.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${n}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet"><title>Sema</title></head>
<body><div id="app"></div><script nonce="${n}" src="${script}"></script></body></html>`;
  }

  /** Queue a message for the webview; consecutive text deltas of one agent are merged. */
  private post(msg: ToWebview): void {
    const last = this.queue[this.queue.length - 1];
    if (msg.type === "event" && last?.type === "event" && mergeDelta(last, msg)) return;
    this.queue.push(msg);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    this.flushTimer = undefined;
    if (!this.view || !this.webviewReady || this.queue.length === 0) return;
    const items = this.queue;
    this.queue = [];
    void this.view.webview.postMessage({ type: "batch", items } satisfies ToWebview);
  }

  private state(): ChatState {
    const s = this.session;
    return {
      sessionId: s?.id,
      busy: (s?.pending ?? 0) > 0 || (s?.connection.remote === true && s.busy),
      pending: s?.pending ?? 0,
      mode: s?.mode ?? this.mode,
      permissionMode: s?.permissionMode ?? this.permissionMode,
      usage: s?.usage,
      totals: s?.totals,
      model: s?.model ?? undefined,
      title: this.title,
    };
  }

  private postState(): void {
    this.post({ type: "state", state: this.state() });
  }

  private bench(figure: Record<string, unknown>): void {
    if (this.benchFile) appendFileSync(this.benchFile, JSON.stringify(figure) + "\n");
  }

  private async onMessage(msg: FromWebview): Promise<void> {
    try {
      switch (msg.type) {
        case "ready":
          this.webviewReady = true;
          this.queue.unshift({ type: "server", state: this.server.state === "ready" ? "ready" : "starting" });
          this.postState();
          void this.warmUp();
          break;
        case "send":
          await this.send(msg.text, msg.delivery, msg.images);
          break;
        case "stop":
          if (this.session) await this.session.interrupt();
          break;
        case "setMode":
          this.mode = msg.mode;
          if (this.session) await this.session.setMode(msg.mode);
          this.postState();
          break;
        case "setPermissionMode":
          this.permissionMode = msg.permissionMode;
          if (this.session) await this.session.setPermissionMode(msg.permissionMode);
          this.postState();
          break;
        case "answer": {
          const pending = this.requests.get(msg.id);
          this.requests.delete(msg.id);
          pending?.resolve(msg.result);
          break;
        }
        case "showDiff": {
          const pending = this.requests.get(msg.id);
          const params = pending?.params as PermissionRequestParams | undefined;
          if (params && this.session) {
            const ok = await showProposedDiff(this.proposed, params.toolName, params.input, this.session.workingDir);
            if (!ok) this.post({ type: "notice", message: "No diff to show for this call." });
          }
          break;
        }
        case "setModel": {
          const session = await this.ensureSession();
          if (!session.connection.supports("session/setModel")) break;
          const result = await session.setModel(msg.model);
          this.post({ type: "notice", message: `Model: ${result.model} (from the next request).` });
          this.postState();
          break;
        }
        case "rewind":
          await this.rewind(msg.messageId, msg.restore, msg.force ?? false);
          break;
        case "redo":
          await this.redo(msg.force ?? false);
          break;
        case "fork":
          await this.fork(msg.messageId);
          break;
        case "reviewChanges":
          await this.reviewChanges(msg.id, msg.path);
          break;
        case "openFile":
          await this.openFile(msg.path, msg.line);
          break;
        case "complete":
          await this.complete(msg.kind, msg.query);
          break;
        case "newChat":
          await this.newChat();
          break;
        case "listSessions":
          await this.listSessions();
          break;
        case "resume":
          await this.resume(msg.sessionId);
          break;
        case "setApiKey":
          await vscode.commands.executeCommand("sema.setApiKey");
          break;
        case "openLink":
          if (/^https?:/.test(msg.href)) await vscode.env.openExternal(vscode.Uri.parse(msg.href));
          else await this.openFile(msg.href);
          break;
        case "rendered":
          // Figures for bench/bench_vscode.mjs (only with SEMA_VSCODE_BENCH_FILE set).
          if (msg.what === "firstToken" && this.sentAt) {
            this.bench({ figure: "sendToFirstTokenRendered", ms: msg.at - this.sentAt });
          }
          if (msg.what === "idle" && this.firstChunkAt) {
            this.bench({
              figure: "streamRendered",
              deltas: this.turnDeltas,
              firstChunkToRenderedMs: msg.at - this.firstChunkAt,
              turnEndToRenderedMs: msg.at - this.turnEndAt,
              chars: msg.count,
            });
          }
          break;
        default:
          exhaustive(msg);
      }
    } catch (err) {
      this.post({ type: "error", message: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Start the server as soon as the view shows, and offer the project's sessions. */
  private async warmUp(): Promise<void> {
    try {
      const conn = await this.server.get();
      this.postFeatures(conn);
      if (!this.session) {
        await this.listSessions();
        // Ready before the first send: a session is listed only once it has a message.
        if (this.workingDir) await this.ensureSession();
      }
    } catch (err) {
      // The server state message already says why (missing, failed).
      void err;
    }
  }

  /**
   * Optional features, offered only when `initialize` lists their methods (a newer client
   * on an older server keeps working without them).
   */
  private features(conn: SemaConnection): Features {
    return {
      models: conn.supports("model/list") && conn.supports("session/setModel"),
      messages: conn.supports("session/messages"),
      rewind: conn.supports("session/rewind"),
      fork: conn.supports("session/fork"),
    };
  }

  private postFeatures(conn: SemaConnection): void {
    const features = this.features(conn);
    this.post({ type: "features", features, models: this.models });
    void this.refreshModels(conn, features);
  }

  /** `model/list` for the picker; with the chat's session, its `current` names the session's model. */
  private async refreshModels(conn: SemaConnection, features = this.features(conn)): Promise<void> {
    if (!features.models) return;
    const session = this.session?.connection === conn ? this.session : undefined;
    try {
      const { models, current } = await conn.listModels(session?.id);
      this.models = models;
      if (session && current) session.modelName = current;
      this.post({ type: "features", features, models });
      this.postState();
    } catch (err) {
      this.post({ type: "error", message: `model/list failed: ${err instanceof Error ? err.message : String(err)}` });
    }
  }

  /** The model/list entry of the session's current model (undefined: not a listed profile). */
  private currentModel(): ModelInfo | undefined {
    const name = this.session?.model;
    return name ? this.models.find((m) => m.name === name) : undefined;
  }

  private onTurnDiff(params: TurnDiff): void {
    if (params.agentId && params.agentId !== "main") return;
    if (!params.files.length) return;
    const id = this.nextRequestId++;
    this.turnDiffs.set(id, params);
    this.post({
      type: "turnDiff",
      id,
      files: params.files.map((f) => ({
        path: f.path,
        status: f.status,
        additions: f.additions,
        deletions: f.deletions,
      })),
    });
  }

  /**
   * "Review changes": one file's change in VS Code's diff editor (its content before the
   * turn, rebuilt from the diff, against the file now), or without `file` the turn's whole
   * patch as a read-only diff document.
   */
  private async reviewChanges(id: number, file?: string): Promise<void> {
    const turn = this.turnDiffs.get(id);
    if (!turn) return;
    const base = this.session?.workingDir ?? this.workingDir ?? "";
    const entry = file ? turn.files.find((f) => f.path === file) : undefined;
    if (entry) {
      const absolute = resolveInWorkspace(entry.path, base);
      const now = entry.status === "deleted" ? "" : readText(absolute);
      const before = entry.status === "added" ? "" : now === undefined ? undefined : reversePatch(entry.diff, now);
      if (before !== undefined) {
        const left = this.proposed.add(absolute, before);
        const right = entry.status === "deleted" ? this.proposed.add(absolute, "") : vscode.Uri.file(absolute);
        const name = path.basename(absolute);
        await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (changes of the turn)`, {
          preview: true,
        });
        return;
      }
    }
    const patch = turn.diff || turn.files.map((f) => f.diff).join("\n");
    const uri = this.proposed.add(path.join(base, `sema-turn-${id}.diff`), patch);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "diff");
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** The chat's session; with `sessionId`, that session (resumed), replacing the current one. */
  private async ensureSession(sessionId?: string): Promise<ChatSession> {
    while (this.creating) await this.creating.catch(() => undefined);
    const current = this.session;
    if (current && (!sessionId || current.id === sessionId)) return current;
    if (current) {
      this.session = undefined;
      this.sessionListener?.dispose();
      await current.dispose();
    }
    this.creating = this.createSession(sessionId).finally(() => (this.creating = undefined));
    return this.creating;
  }

  private async createSession(sessionId?: string): Promise<ChatSession> {
    const workingDir = this.workingDir;
    if (!workingDir) throw new Error("Open a folder to chat with Sema about it.");
    const conn = await this.server.get();
    const model = vscode.workspace.getConfiguration("sema").get<string>("model", "") || undefined;
    const session = await conn.createSession({
      workingDir,
      sessionId,
      model,
      permissionMode: this.permissionMode,
      ...(sessionId ? {} : { mode: this.mode }),
    });
    this.attach(session);
    return session;
  }

  private attach(session: ChatSession): void {
    this.sessionListener?.dispose();
    this.session = session;
    session.handler = { request: (method, params, token) => this.serverRequest(method, params, token) };
    this.sessionListener = session.onEvent((event) => this.onEvent(event));
    this.mode = session.mode;
    this.permissionMode = session.permissionMode;
    this.sandboxBar.show(session.sandbox);
    this.post({ type: "inputHistory", items: session.ready?.projectInputHistory ?? [] });
    if (this.ignoredPermissionMode !== undefined) {
      this.post({ type: "notice", message: ignoredNotice(this.ignoredPermissionMode, session.permissionMode) });
    }
    const held = (session.ready?.mcpServers ?? []).filter((s) => s.state === "untrusted").map((s) => s.name);
    if (held.length) {
      this.post({
        type: "notice",
        message: `Not started: the MCP servers this project defines (${held.join(", ")}). Sema asks you before your first prompt runs.`,
      });
    }
    this.postState();
    void this.refreshModels(session.connection);
  }

  /** After a server restart: the chat continues on the same session id (its history is on disk). */
  private async reattach(conn: SemaConnection): Promise<void> {
    this.postFeatures(conn);
    const old = this.session;
    if (!old || old.connection.remote) return; // a session of another process: not this server's
    this.session = undefined;
    for (const [id, pending] of this.requests) {
      pending.resolve({ decision: "reject" });
      this.post({ type: "requestCancelled", id });
    }
    this.requests.clear();
    try {
      await this.ensureSession(old.id);
      this.post({ type: "notice", message: "The server was restarted; this chat goes on from its saved history." });
    } catch (err) {
      this.post({ type: "error", message: `Could not reopen the chat: ${(err as Error).message}` });
    }
  }

  private onEvent(event: SessionEvent): void {
    if (event.method === "message:text:chunk" && event.params.agentId === "main") {
      if (this.turnDeltas++ === 0) this.firstChunkAt = Date.now();
    }
    if (event.method === "turn:diff") {
      this.onTurnDiff(event.params);
      return;
    }
    this.post({ type: "event", ...event });
    if (event.method === "sandbox:update" || event.method === "session:ready") {
      this.sandboxBar.show(this.session?.sandbox);
    }
    if (
      event.method === "state:update" ||
      event.method === "conversation:usage" ||
      event.method === "mode:update" ||
      event.method === "model:update" ||
      event.method === "session:ready"
    ) {
      this.postState();
    }
  }

  private async send(text: string, delivery?: "followUp" | "steer", images: ImageAttachment[] = []): Promise<void> {
    if (images.length) {
      // Refused here when the model is known not to read images (the server would refuse
      // too); a model the list does not know is left for the server to decide.
      const model = this.currentModel();
      if (model && !model.images) {
        this.post({
          type: "notice",
          message: `${model.name} does not take images: pick a model that does (the picker marks them), or send text only.`,
        });
        this.post({ type: "restoreInput", text, images });
        return;
      }
    }
    const busy = this.state().busy;
    const localId = this.nextRequestId++;
    this.post({
      type: "user",
      text,
      delivery: busy ? (delivery ?? "followUp") : "prompt",
      localId,
      images: images.map((i) => ({ name: i.name, mediaType: i.mediaType })),
    });
    const session = await this.ensureSession();
    this.title ??= text.slice(0, 100);
    this.sentAt = Date.now();
    this.turnDeltas = 0;
    this.firstChunkAt = 0;
    const input: PromptInput = images.length
      ? [
          ...images.map((i) => ({ type: "image" as const, data: i.data, mediaType: i.mediaType })),
          ...(text ? [{ type: "text" as const, text }] : []),
        ]
      : text;
    const answer = session.prompt(input, delivery ?? "followUp");
    this.postState();
    try {
      const result = await answer;
      this.turnEndAt = Date.now();
      if (result.messageId) this.post({ type: "messageId", localId, messageId: result.messageId });
      this.post({
        type: "turnEnd",
        stopReason: result.stopReason,
        error: result.error ? String((result.error as { message?: string }).message ?? "") : undefined,
      });
    } catch (err) {
      const message = err instanceof SemaError ? err.message : String(err);
      this.post({ type: "turnEnd", stopReason: "error", error: message });
    } finally {
      this.postState();
    }
  }

  /** A server→client request shown inline in the chat; withdrawn if the server cancels it. */
  private serverRequest<K extends ServerRequestName>(
    method: K,
    params: ServerRequests[K]["params"],
    token: CancellationToken,
  ): Promise<ServerRequests[K]["result"]> {
    const id = this.nextRequestId++;
    return new Promise((resolve) => {
      this.requests.set(id, { method, params, resolve: resolve as (r: RequestAnswer) => void });
      token.onCancellationRequested(() => {
        if (!this.requests.delete(id)) return;
        this.post({ type: "requestCancelled", id });
        resolve((method === "tool:permission:request" ? { decision: "reject" } : {}) as never);
      });
      if (method === "tool:permission:request") {
        const p = params as PermissionRequestParams;
        const canDiff = (p.toolName === "Write" || p.toolName === "Edit") && typeof p.input.file_path === "string";
        this.post({ type: "permission", id, params: p, canDiff });
      } else if (method === "ask:question:request") {
        this.post({ type: "question", id, params: params as ServerRequests["ask:question:request"]["params"] });
      } else {
        this.post({ type: "planExit", id, params: params as ServerRequests["plan:exit:request"]["params"] });
      }
    });
  }

  async openFile(file: string, line?: number): Promise<void> {
    const base = this.session?.workingDir ?? this.workingDir ?? "";
    const match = /^(.*?):(\d+)$/.exec(file);
    if (match && line === undefined) {
      file = match[1]!;
      line = Number(match[2]);
    }
    const uri = vscode.Uri.file(resolveInWorkspace(file, base));
    const options: vscode.TextDocumentShowOptions = { preview: true };
    if (line && line > 0) options.selection = new vscode.Range(line - 1, 0, line - 1, 0);
    await vscode.window.showTextDocument(uri, options);
  }

  private async complete(kind: "file" | "command", query: string): Promise<void> {
    let items: Completion[] = [];
    if (kind === "file") {
      const pattern = query ? `**/*${query.replace(/[[\]{}*?]/g, "")}*` : "**/*";
      const uris = await vscode.workspace.findFiles(pattern, "**/{node_modules,.git,.venv,out,dist}/**", 50);
      const base = this.workingDir ?? "";
      items = uris
        .map((u) => path.relative(base, u.fsPath))
        .sort((a, b) => a.length - b.length || a.localeCompare(b))
        .slice(0, 30)
        .map((rel) => ({ label: rel, insert: /\s/.test(rel) ? `@"${rel}" ` : `@${rel} ` }));
    } else {
      const custom: Completion[] = [];
      try {
        const conn = await this.server.get();
        const dir = this.workingDir;
        if (dir) {
          const { commands } = await conn.request("command/list", { workingDir: dir });
          for (const c of commands) {
            custom.push({
              label: `/${c.name}`,
              detail: [c.argumentHint, c.description].filter(Boolean).join(" — "),
              insert: `/${c.name} `,
            });
          }
        }
      } catch {
        // Completion is a convenience: no server, no custom commands.
      }
      items = [...BUILTIN_COMMANDS, ...custom].filter((c) => c.label.slice(1).startsWith(query));
    }
    this.post({ type: "completions", kind, query, items });
  }

  async listSessions(): Promise<void> {
    const conn = await this.server.get();
    const { sessions } = await conn.request("session/list", { workingDir: this.workingDir });
    this.post({ type: "sessions", items: sessions.slice(0, 50) });
  }

  /** "Sema: Rename Chat…": the title `session/list` shows for this chat (`session/rename`);
   *  an empty title gives it back the title of its first message. */
  async renameChat(): Promise<void> {
    const session = this.session;
    if (!session) {
      void vscode.window.showInformationMessage("Start a chat first: there is nothing to rename yet.");
      return;
    }
    if (!session.connection.supports("session/rename")) {
      void vscode.window.showWarningMessage("This sema-rpc cannot rename sessions (it has no session/rename).");
      return;
    }
    const title = await vscode.window.showInputBox({
      prompt: "Chat title (empty: the first message)",
      value: this.title ?? "",
    });
    if (title === undefined) return;
    const result = await session.connection.request("session/rename", { sessionId: session.id, title });
    this.title = result.title ?? undefined;
    this.postState();
    await this.listSessions().catch(() => undefined);
  }

  /** "Sema: Set Sandbox…": the OS sandbox the chat's commands run in (`session/setSandbox`). */
  async setSandbox(): Promise<void> {
    const session = this.session;
    if (!session?.sandbox || !session.connection.supports("session/setSandbox")) {
      void vscode.window.showInformationMessage("Start a chat first (with a sema-rpc that has a sandbox).");
      return;
    }
    if (!session.sandbox.available) {
      void vscode.window.showWarningMessage(`No sandbox here: ${session.sandbox.reason ?? "unavailable"}`);
      return;
    }
    const picked = await vscode.window.showQuickPick(
      [
        { label: "workspace-write", detail: "Commands write only inside the workspace (not .git/), no network" },
        { label: "read-only", detail: "Commands cannot write (but a temp dir) or connect" },
        { label: "off", detail: "Commands run unconfined" },
      ] as const,
      { placeHolder: `Sandbox for this chat's commands (now: ${session.sandbox.mode})` },
    );
    if (!picked) return;
    const state = await session.setSandbox(picked.label);
    this.sandboxBar.show(state);
  }

  /** A new, empty chat; the previous session is disposed (its history stays resumable). */
  async newChat(): Promise<void> {
    const old = this.session;
    this.session = undefined;
    this.sessionListener?.dispose();
    this.title = undefined;
    this.post({ type: "reset" });
    this.postState();
    await old?.dispose();
    await this.listSessions().catch(() => undefined);
    if (this.workingDir) await this.ensureSession();
  }

  /** Resume a saved session into this chat. */
  async resume(sessionId: string): Promise<void> {
    const conn = await this.server.get();
    const { sessions } = await conn.request("session/list", { workingDir: this.workingDir });
    const item = sessions.find((s) => s.sessionId === sessionId);
    const old = this.session;
    this.session = undefined;
    this.sessionListener?.dispose();
    await old?.dispose();
    this.title = item?.title ?? undefined;
    this.post({
      type: "reset",
      resumed: { title: item?.title ?? sessionId, messageCount: item?.messageCount ?? 0 },
    });
    const session = await this.ensureSession(sessionId);
    await this.showConversation(session);
    this.postState();
  }

  /**
   * A session another process hosts replaces this chat's (which is disposed: a session of
   * ours stays resumable): its earlier conversation drawn, then (`attachedNow`) its stream.
   */
  async openAttached(session: ChatSession, title: string, pid?: number): Promise<void> {
    const old = this.session;
    this.session = undefined;
    this.sessionListener?.dispose();
    await old?.dispose();
    this.title = title;
    this.post({ type: "reset", notice: `Attached to a session of another process${pid ? ` (pid ${pid})` : ""}.` });
    await this.showConversation(session);
    this.attach(session);
    session.connection.onExit(() => {
      session.busy = false;
      if (this.session !== session) return;
      this.post({ type: "notice", message: "The server of this session went away." });
      this.postState();
    });
  }

  /** `session/attach` answered: say what the session is doing (its open requests follow). */
  attachedNow(session: ChatSession, attach: AttachResult): void {
    const parts: string[] = [attach.state ?? "idle"];
    if (attach.queuedPrompts) parts.push(`${attach.queuedPrompts} queued`);
    if (attach.pendingRequests?.length) parts.push(`${attach.pendingRequests.length} waiting for an answer`);
    this.post({ type: "notice", message: `Live: ${parts.join(", ")}. Closing this chat leaves the session running.` });
    if (this.session === session) this.postState();
  }

  /** The session's conversation as the server keeps it (when it can read it back). */
  private async showConversation(session: ChatSession): Promise<void> {
    if (!session.connection.supports("session/messages")) return;
    this.post({ type: "messages", messages: await session.messages() });
  }

  /**
   * `session/rewind`: back to just before one of the user's messages (files, conversation
   * or both). Files changed since the agent wrote them are a conflict: the chat asks
   * inline, and only "Overwrite" repeats the rewind with `force`.
   */
  private async rewind(messageId: string, restore: RestoreWhat, force: boolean): Promise<void> {
    const session = this.session;
    if (!session || !session.connection.supports("session/rewind")) return;
    const result = await session.rewind(messageId, restore, force);
    if (!result.rewound) {
      const conflicts = result.conflicts ?? [];
      if (conflicts.length) {
        this.post({ type: "rewindConflicts", messageId, restore, conflicts });
      } else {
        this.post({ type: "notice", message: "Nothing to rewind: the files and the conversation are as they were." });
      }
      return;
    }
    const conversation = restore !== "code";
    if (conversation) {
      this.post({ type: "reset" });
      await this.showConversation(session);
      // The message goes back into the input, to be edited and sent again.
      if (result.input) this.post({ type: "restoreInput", text: result.input, images: [] });
    }
    this.post({ type: "rewound", messageId, restore, restoredFiles: result.restoredFiles ?? [] });
    this.postState();
  }

  /** `session/rewind` with `redo`: put back what the last rewind changed (conflicts ask first). */
  private async redo(force: boolean): Promise<void> {
    const session = this.session;
    if (!session || !session.connection.supports("session/rewind")) return;
    const result = await session.redo(force);
    if (!result.rewound) {
      const conflicts = result.conflicts ?? [];
      if (conflicts.length) this.post({ type: "rewindConflicts", restore: result.restore ?? "both", conflicts });
      return;
    }
    this.post({ type: "reset" });
    await this.showConversation(session);
    this.post({ type: "redone", restoredFiles: result.restoredFiles ?? [] });
    this.postState();
  }

  /** `session/fork`: a new chat holding the conversation before that message, its text in the input. */
  private async fork(messageId: string): Promise<void> {
    const old = this.session;
    if (!old || !old.connection.supports("session/fork")) return;
    while (this.creating) await this.creating.catch(() => undefined);
    const { session, input } = await old.fork(messageId);
    this.session = undefined;
    this.sessionListener?.dispose();
    await old.dispose();
    this.title = this.title ? `${this.title} (fork)` : undefined;
    this.post({ type: "reset", notice: "Forked: a new chat from before that message; the original is kept." });
    this.attach(session);
    await this.showConversation(session);
    if (input) this.post({ type: "restoreInput", text: input, images: [] });
    this.postState();
  }

  async pickSession(): Promise<void> {
    const conn = await this.server.get();
    const { sessions } = await conn.request("session/list", { workingDir: this.workingDir });
    if (sessions.length === 0) {
      void vscode.window.showInformationMessage("No saved Sema sessions in this folder yet.");
      return;
    }
    const pick = await vscode.window.showQuickPick(
      sessions.map((s) => ({
        label: s.title || s.sessionId,
        description: `${s.messageCount} messages`,
        detail: new Date(s.updatedAt).toLocaleString(),
        sessionId: s.sessionId,
      })),
      { placeHolder: "Resume a Sema session" },
    );
    if (pick) await this.resume(pick.sessionId);
  }

  reveal(): void {
    this.view?.show(false);
  }

  async shutdown(): Promise<void> {
    await this.session?.dispose();
  }

  dispose(): void {
    this.sandboxBar.dispose();
    for (const d of this.disposables) d.dispose();
    this.sessionListener?.dispose();
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }
}
