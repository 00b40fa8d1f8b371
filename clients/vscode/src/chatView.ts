// The chat view: a webview in Sema's activity-bar container, one session per chat. This
// module wires the webview to the chat's session; the jobs it hands off live beside it:
// outbox.ts (batched messages), webviewHtml.ts (the document and its CSP), inlineRequests.ts
// (consent, questions, plans), turnDiffs.ts ("Review changes"), completions.ts (`@`, `/`),
// chatPickers.ts (rename, sandbox, resume pickers), chatBench.ts (bench figures).
import * as vscode from "vscode";
import { ChatBench } from "./chatBench";
import { ChatModels } from "./chatModels";
import { pickSandbox, pickSavedSession, renameChat } from "./chatPickers";
import {
  SemaError,
  type AttachResult,
  type ChatSession,
  type PromptInput,
  type SemaConnection,
  type SessionEvent,
} from "./client";
import { completions } from "./completions";
import { showProposedDiff, type ProposedContentProvider } from "./diff";
import { InlineRequests } from "./inlineRequests";
import {
  exhaustive,
  type ChatState,
  type FromWebview,
  type ImageAttachment,
  type Mode,
  type PermissionMode,
  type ToWebview,
} from "./messages";
import { WebviewOutbox } from "./outbox";
import { redo, rewind, showConversation, type ChatOutput } from "./rewind";
import { SandboxStatusBar } from "./sandboxStatus";
import type { ServerManager } from "./server";
import { ignoredNotice, permissionModeSetting } from "./trust";
import { changedFiles, TurnDiffs } from "./turnDiffs";
import { resolveInWorkspace } from "./util";
import { webviewHtml } from "./webviewHtml";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "sema.chat";
  private view: vscode.WebviewView | undefined;
  /** Messages wait until the webview's script listens (anything posted earlier is lost). */
  private readonly outbox = new WebviewOutbox((batch) => {
    if (!this.view) return false;
    void this.view.webview.postMessage(batch);
    return true;
  });
  private session: ChatSession | undefined;
  private readonly sandboxBar = new SandboxStatusBar();
  private sessionListener: { dispose(): void } | undefined;
  private creating: Promise<ChatSession> | undefined;
  /** One counter for the ids of the chat's cards (requests, turn diffs, sent messages). */
  private nextId = 1;
  private readonly newId = (): number => this.nextId++;
  private readonly requests = new InlineRequests(this.newId, (msg) => this.post(msg));
  private mode: Mode = "Agent";
  private permissionMode: PermissionMode;
  /** The folder's sema.permissionMode that Restricted Mode ignores (said in the chat). */
  private ignoredPermissionMode: PermissionMode | undefined;
  private title: string | undefined;
  private disposables: vscode.Disposable[] = [];
  private readonly figures = new ChatBench();
  private readonly turnDiffs: TurnDiffs;
  private readonly out: ChatOutput = { post: (msg) => this.post(msg), postState: () => this.postState() };
  private readonly models = new ChatModels(
    (msg) => this.post(msg),
    () => this.postState(),
  );

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly server: ServerManager,
    private readonly proposed: ProposedContentProvider,
  ) {
    this.turnDiffs = new TurnDiffs(proposed);
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
    this.outbox.unready();
    const media = vscode.Uri.joinPath(this.context.extensionUri, "out");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    const uri = (file: string) => view.webview.asWebviewUri(vscode.Uri.joinPath(media, file)).toString();
    view.webview.html = webviewHtml(view.webview.cspSource, uri("webview.js"), uri("webview-style.css"));
    view.webview.onDidReceiveMessage((msg: FromWebview) => void this.onMessage(msg), undefined, this.disposables);
    view.onDidDispose(
      () => {
        this.view = undefined;
        this.outbox.unready();
      },
      undefined,
      this.disposables,
    );
  }

  /** Queue a message for the webview (sent in batches; text deltas merged). */
  private post(msg: ToWebview): void {
    this.outbox.post(msg);
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

  private async onMessage(msg: FromWebview): Promise<void> {
    try {
      switch (msg.type) {
        case "ready":
          this.outbox.ready({ type: "server", state: this.server.state === "ready" ? "ready" : "starting" });
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
        case "answer":
          this.requests.answer(msg.id, msg.result);
          break;
        case "showDiff": {
          const params = this.requests.permission(msg.id);
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
          await rewind(this.session, msg.messageId, msg.restore, msg.force ?? false, this.out);
          break;
        case "redo":
          await redo(this.session, msg.force ?? false, this.out);
          break;
        case "fork":
          await this.fork(msg.messageId);
          break;
        case "reviewChanges":
          await this.turnDiffs.review(msg.id, this.session?.workingDir ?? this.workingDir ?? "", msg.path);
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
          this.figures.rendered(msg);
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
      this.models.offer(conn, this.session);
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
    session.handler = { request: (method, params, token) => this.requests.ask(method, params, token) };
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
    void this.models.refresh(session.connection, session);
  }

  /** After a server restart: the chat continues on the same session id (its history is on disk). */
  private async reattach(conn: SemaConnection): Promise<void> {
    this.models.offer(conn, this.session);
    const old = this.session;
    if (!old || old.connection.remote) return; // a session of another process: not this server's
    this.session = undefined;
    this.requests.withdrawAll();
    try {
      await this.ensureSession(old.id);
      this.post({ type: "notice", message: "The server was restarted; this chat goes on from its saved history." });
    } catch (err) {
      this.post({ type: "error", message: `Could not reopen the chat: ${(err as Error).message}` });
    }
  }

  private onEvent(event: SessionEvent): void {
    if (event.method === "message:text:chunk" && event.params.agentId === "main") this.figures.chunk();
    if (event.method === "turn:diff") {
      const id = this.newId();
      if (this.turnDiffs.add(id, event.params)) this.post({ type: "turnDiff", id, files: changedFiles(event.params) });
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
    const refused = images.length ? this.models.imagesRefused(this.session) : undefined;
    if (refused) {
      this.post({ type: "notice", message: refused });
      this.post({ type: "restoreInput", text, images });
      return;
    }
    const busy = this.state().busy;
    const localId = this.newId();
    this.post({
      type: "user",
      text,
      delivery: busy ? (delivery ?? "followUp") : "prompt",
      localId,
      images: images.map((i) => ({ name: i.name, mediaType: i.mediaType })),
    });
    const session = await this.ensureSession();
    this.title ??= text.slice(0, 100);
    this.figures.sent();
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
      this.figures.turnEnded();
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
    const base = this.workingDir ?? "";
    const items = await completions(kind, query, {
      base,
      findFiles: async (include, exclude, max) =>
        (await vscode.workspace.findFiles(include, exclude, max)).map((u) => u.fsPath),
      listCommands: async () => {
        const conn = await this.server.get();
        return base ? (await conn.request("command/list", { workingDir: base })).commands : undefined;
      },
    });
    this.post({ type: "completions", kind, query, items });
  }

  async listSessions(): Promise<void> {
    const conn = await this.server.get();
    const { sessions } = await conn.request("session/list", { workingDir: this.workingDir });
    this.post({ type: "sessions", items: sessions.slice(0, 50) });
  }

  /** "Sema: Rename Chat…" (an empty title: the first message's). */
  async renameChat(): Promise<void> {
    const title = await renameChat(this.session, this.title);
    if (title === false) return;
    this.title = title;
    this.postState();
    await this.listSessions().catch(() => undefined);
  }

  /** "Sema: Set Sandbox…": the status bar shows the sandbox picked. */
  async setSandbox(): Promise<void> {
    const state = await pickSandbox(this.session);
    if (state) this.sandboxBar.show(state);
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
    await showConversation(session, this.out);
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
    await showConversation(session, this.out);
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
    await showConversation(session, this.out);
    if (input) this.post({ type: "restoreInput", text: input, images: [] });
    this.postState();
  }

  async pickSession(): Promise<void> {
    const conn = await this.server.get();
    const { sessions } = await conn.request("session/list", { workingDir: this.workingDir });
    const sessionId = await pickSavedSession(sessions);
    if (sessionId) await this.resume(sessionId);
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
    this.outbox.dispose();
  }
}
