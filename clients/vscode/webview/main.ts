// The chat webview. Streams are rendered in batches, once per animation frame, and only the
// block that is growing is re-rendered (its settled paragraphs are rendered once).
import type { ModelInfo, TranscriptMessage, UsageTotals } from "../src/client";
import type {
  ChatState,
  Completion,
  Features,
  FromWebview,
  ChangedFile,
  ImageAttachment,
  RestoreWhat,
  RewindConflict,
  ToWebview,
} from "../src/messages";
import type {
  AskQuestionRequestParams,
  PermissionRequestParams,
  PlanExitRequestParams,
  SessionListItem,
  TodoItem,
  TokenUsage,
} from "../src/protocol";
import { renderMarkdown, stablePrefix } from "./markdown";

declare function acquireVsCodeApi(): { postMessage(msg: FromWebview): void };
const vscode = acquireVsCodeApi();
const send = (msg: FromWebview): void => vscode.postMessage(msg);

// ------------------------------------------------------------------ small DOM helpers
type Attrs = Record<string, string | boolean | ((ev: Event) => void)>;
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

function fileLink(path: string, line?: number, label?: string): HTMLAnchorElement {
  return h(
    "a",
    {
      class: "file-link",
      href: "#",
      title: `Open ${path}${line ? `:${line}` : ""}`,
      onclick: (ev: Event) => {
        ev.preventDefault();
        ev.stopPropagation();
        send({ type: "openFile", path, line });
      },
    },
    label ?? (line ? `${path}:${line}` : path),
  );
}

function formatTokens(n = 0): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)}k` : String(n);
}

// ------------------------------------------------------------------ render scheduling
interface Renderable {
  render(): void;
}
const dirty = new Set<Renderable>();
let frameRequested = false;
let stickToBottom = true;
let awaitingFirstToken = false;
let turnEndedPendingIdle = false;

function markDirty(r: Renderable): void {
  dirty.add(r);
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(renderFrame);
  }
}

function renderFrame(): void {
  frameRequested = false;
  const now = performance.now();
  const later: Renderable[] = [];
  for (const r of dirty) {
    // A block whose last render was slow waits a few frames: the view keeps up with any
    // stream rate, the text shows up at a lower frame rate, never later than the turn.
    if (r instanceof MarkdownBlock && now < r.nextRenderAt && !turnEndedPendingIdle) later.push(r);
    else r.render();
  }
  dirty.clear();
  for (const r of later) markDirty(r);
  if (stickToBottom) log.scrollTop = log.scrollHeight;
  if (turnEndedPendingIdle && later.length === 0) {
    turnEndedPendingIdle = false;
    send({ type: "rendered", what: "idle", at: Date.now(), count: lastAnswerLength() });
  }
}

function lastAnswerLength(): number {
  const answers = log.querySelectorAll(".md.answer");
  return answers.length ? (answers[answers.length - 1] as HTMLElement).innerText.length : 0;
}

/** Markdown that grows: settled paragraphs are frozen once, only the tail re-renders. */
class MarkdownBlock implements Renderable {
  readonly el: HTMLElement;
  private readonly frozen = h("div");
  private readonly live = h("div");
  private text = "";
  private frozenUpTo = 0;
  nextRenderAt = 0;

  constructor(cls: string) {
    this.el = h("div", { class: `md ${cls}` }, this.frozen, this.live);
  }

  append(delta: string): void {
    this.text += delta;
    markDirty(this);
  }

  set(text: string): void {
    this.text = text;
    this.frozen.replaceChildren();
    this.frozenUpTo = 0;
    markDirty(this);
  }

  get length(): number {
    return this.text.length;
  }

  render(): void {
    const started = performance.now();
    const tail = this.text.slice(this.frozenUpTo);
    const cut = stablePrefix(tail);
    if (cut > 0) {
      this.frozen.append(renderMarkdown(tail.slice(0, cut)));
      this.frozenUpTo += cut;
    }
    this.live.replaceChildren(renderMarkdown(this.text.slice(this.frozenUpTo)));
    const took = performance.now() - started;
    this.nextRenderAt = took > 8 ? started + 4 * took : 0;
    if (awaitingFirstToken && this.el.classList.contains("answer") && this.text) {
      awaitingFirstToken = false;
      send({ type: "rendered", what: "firstToken", at: Date.now() });
    }
  }
}

/** Plain text that grows (tool output): appended, never re-rendered. */
class TextStream implements Renderable {
  readonly el = h("pre", { class: "output" });
  private pending = "";
  private total = 0;
  static readonly LIMIT = 200_000;

  append(delta: string): void {
    this.pending += delta;
    markDirty(this);
  }

  set(text: string): void {
    this.el.textContent = "";
    this.total = 0;
    this.pending = text;
    markDirty(this);
  }

  render(): void {
    if (!this.pending) return;
    if (this.total < TextStream.LIMIT) {
      const piece = this.pending.slice(0, TextStream.LIMIT - this.total);
      this.el.append(piece);
      this.total += piece.length;
      if (this.total >= TextStream.LIMIT) this.el.append("\n… (output truncated in the view)");
    }
    this.pending = "";
  }
}

// ------------------------------------------------------------------ transcript model
interface ToolCard {
  el: HTMLDetailsElement;
  status: HTMLElement;
  summary: HTMLElement;
  body: HTMLElement;
  output: TextStream;
  consent: HTMLElement;
  name: string;
  subagent?: AgentView;
}

class AgentView {
  text: MarkdownBlock | undefined;
  thinking: { el: HTMLDetailsElement; block: MarkdownBlock } | undefined;
  constructor(readonly container: HTMLElement) {}

  answer(): MarkdownBlock {
    if (!this.text) {
      this.text = new MarkdownBlock("answer");
      this.container.append(this.text.el);
    }
    return this.text;
  }

  think(): MarkdownBlock {
    if (!this.thinking) {
      const block = new MarkdownBlock("thinking-text");
      const el = h("details", { class: "thinking" }, h("summary", {}, "Thinking"), block.el);
      this.container.append(el);
      this.thinking = { el, block };
    }
    return this.thinking.block;
  }

  settle(): void {
    this.text = undefined;
    this.thinking = undefined;
  }
}

const app = document.getElementById("app")!;
const headerTitle = h("span", { class: "title" }, "New chat");
const usageEl = h("span", { class: "usage", title: "Context used" });
const serverEl = h("div", { class: "server-status hidden" });
const log = h("div", { class: "log", role: "log" });
const welcome = h("div", { class: "welcome" });
const todosEl = h("div", { class: "todos hidden" });
/** Follow-ups waiting for the running turn; each moves into the transcript when its turn starts. */
const queueEl = h("div", { class: "queue" });
let expectTurnStart = 0;
const popup = h("div", { class: "completions hidden", role: "listbox" });
const input = h("textarea", {
  class: "input",
  rows: "1",
  placeholder: "Ask Sema… (@ for files, / for commands)",
  "aria-label": "Message",
});
const modeBtn = h("button", { class: "mode", title: "Agent or Plan mode (Plan: read-only)" }, "Agent");
const permSelect = h(
  "select",
  { class: "perm", title: "Permission mode" },
  h("option", { value: "default" }, "Ask before edits"),
  h("option", { value: "acceptEdits" }, "Accept edits"),
  h("option", { value: "bypass" }, "Bypass (no asking)"),
);
const modelSelect = h("select", { class: "model hidden", title: "Model (from the next request)" });
/** Images pasted or dropped into the input, sent with the next message. */
const attachmentsEl = h("div", { class: "attachments hidden" });
const stopBtn = h("button", { class: "stop hidden", title: "Stop (session/interrupt)" }, "Stop");
const steerBtn = h("button", { class: "steer hidden", title: "Add to the running turn (Alt+Enter)" }, "Steer");
const sendBtn = h("button", { class: "send primary", title: "Send (Enter)" }, "Send");

app.append(
  h(
    "div",
    { class: "header" },
    headerTitle,
    usageEl,
    h("span", { class: "spacer" }),
    h("button", { class: "icon sessions-btn", title: "Sessions", onclick: () => toggleSessions() }, "History"),
    h("button", { class: "icon new-chat", title: "New chat", onclick: () => send({ type: "newChat" }) }, "New"),
  ),
  serverEl,
  log,
  todosEl,
  queueEl,
  h(
    "div",
    { class: "composer" },
    popup,
    attachmentsEl,
    input,
    h("div", { class: "toolbar" }, modeBtn, permSelect, modelSelect, h("span", { class: "spacer" }), stopBtn, steerBtn, sendBtn),
  ),
);
log.append(welcome);

const agents = new Map<string, AgentView>();
const tools = new Map<string, ToolCard>();
let main = new AgentView(log);
agents.set("main", main);
let state: ChatState = { busy: false, pending: 0, mode: "Agent", permissionMode: "default" };
let sessions: SessionListItem[] = [];
let features: Features = { models: false, messages: false, rewind: false, fork: false };
let models: ModelInfo[] = [];
let attachments: ImageAttachment[] = [];
/** The text a rewind or fork put in the input (a redo takes it back out, if unchanged). */
let restoredInput: string | undefined;
let inputHistory: string[] = [];
let historyPos = -1;
let draft = "";

log.addEventListener("scroll", () => {
  stickToBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
});

function agent(id: string | undefined): AgentView {
  return agents.get(id ?? "main") ?? main;
}

function resetTranscript(): void {
  log.replaceChildren(welcome);
  queueEl.replaceChildren();
  expectTurnStart = 0;
  agents.clear();
  tools.clear();
  main = new AgentView(log);
  agents.set("main", main);
  todosEl.classList.add("hidden");
  dirty.clear();
  renderWelcome();
}

function hideWelcome(): void {
  welcome.remove();
}

function renderWelcome(): void {
  const list = h("div", { class: "session-list" });
  for (const s of sessions) list.append(sessionItem(s));
  welcome.replaceChildren(
    h("h2", {}, "Sema"),
    h("p", { class: "muted" }, "Ask about this workspace, or have Sema change it. Every write asks you first."),
    sessions.length ? h("h3", {}, "Recent sessions") : "",
    list,
  );
}

function sessionItem(s: SessionListItem): HTMLElement {
  const when = new Date(s.updatedAt);
  return h(
    "button",
    {
      class: "session-item",
      "data-session": s.sessionId,
      title: `Resume ${s.sessionId}`,
      onclick: () => {
        sessionsOverlay?.remove();
        sessionsOverlay = undefined;
        send({ type: "resume", sessionId: s.sessionId });
      },
    },
    h("span", { class: "session-title" }, s.title || s.sessionId),
    h("span", { class: "muted" }, `${s.messageCount} messages · ${when.toLocaleString()}`),
  );
}

let sessionsOverlay: HTMLElement | undefined;
function toggleSessions(): void {
  if (sessionsOverlay) {
    sessionsOverlay.remove();
    sessionsOverlay = undefined;
    return;
  }
  sessionsOverlay = h("div", { class: "sessions-overlay" }, h("h3", {}, "Sessions"), h("p", { class: "muted" }, "Loading…"));
  app.append(sessionsOverlay);
  send({ type: "listSessions" });
}

function renderSessionsOverlay(): void {
  if (!sessionsOverlay) return;
  const list = h("div", { class: "session-list" });
  for (const s of sessions) list.append(sessionItem(s));
  sessionsOverlay.replaceChildren(
    h("h3", {}, "Sessions"),
    sessions.length ? list : h("p", { class: "muted" }, "No saved sessions in this folder yet."),
  );
}

function notice(text: string, cls = "notice", where: HTMLElement = log): HTMLElement {
  hideWelcome();
  const el = h("div", { class: cls }, text);
  where.append(el);
  markDirty({ render() {} });
  return el;
}

function errorBox(message: string, where: HTMLElement = log, withKey = false): void {
  hideWelcome();
  const el = h("div", { class: "error", role: "alert" }, h("span", {}, message));
  if (withKey) el.append(h("button", { onclick: () => send({ type: "setApiKey" }) }, "Set API Key"));
  where.append(el);
  markDirty({ render() {} });
}

function formatCost(usd: number): string {
  return usd >= 1 ? `$${usd.toFixed(2)}` : usd >= 0.01 ? `$${usd.toFixed(3)}` : `$${usd.toFixed(4)}`;
}

/** Context used (of the window) and, when the model's price is known, the session's cost. */
function usageText(u: TokenUsage | undefined, totals: UsageTotals | undefined): void {
  const parts: string[] = [];
  let pct = 0;
  if (u && u.maxTokens && u.useTokens !== undefined) {
    pct = Math.round((100 * u.useTokens) / u.maxTokens);
    parts.push(`${formatTokens(u.useTokens)} / ${formatTokens(u.maxTokens)} (${pct}%)`);
  }
  const cost = totals?.costUsd;
  if (cost !== undefined && cost !== null) parts.push(formatCost(cost));
  usageEl.textContent = parts.join(" · ");
  usageEl.title = totals
    ? `Context used. Session: ${formatTokens(totals.inputTokens)} in, ${formatTokens(totals.outputTokens)} out, ` +
      `${formatTokens(totals.cacheReadTokens)} cache read, ${formatTokens(totals.cacheWriteTokens)} cache write` +
      (cost === null || cost === undefined ? " (no price known for this model)" : `, ${formatCost(cost)}`)
    : "Context used";
  usageEl.style.setProperty("--used", `${Math.min(100, pct)}%`);
  usageEl.classList.toggle("high", pct >= 75);
}

// ------------------------------------------------------------------ tool cards
const STATUS = { running: "⟳", asking: "?", done: "✓", error: "✗" } as const;

function setStatus(card: ToolCard, status: keyof typeof STATUS): void {
  card.status.textContent = STATUS[status];
  card.el.dataset.status = status;
}

function pathOf(input: Record<string, unknown>): string | undefined {
  for (const key of ["file_path", "path", "notebook_path"]) {
    if (typeof input[key] === "string") return input[key] as string;
  }
  return undefined;
}

function toolCard(a: AgentView, id: string, name: string, title: string, input: Record<string, unknown>): ToolCard {
  a.settle();
  const status = h("span", { class: "status" });
  const summary = h("span", { class: "summary muted" });
  const file = pathOf(input);
  const titleEl = h("span", { class: "tool-title" });
  // Titles often start with the tool's name ("Write a.txt"): the name is shown once.
  if (title.startsWith(`${name} `)) title = title.slice(name.length + 1);
  if (file && title.includes(file)) {
    const [before, ...rest] = title.split(file);
    titleEl.append(before ?? "", fileLink(file), rest.join(file));
  } else {
    titleEl.append(title || name);
    if (file) titleEl.append(" ", fileLink(file));
  }
  const output = new TextStream();
  const consent = h("div", { class: "consent-slot" });
  const body = h("div", { class: "tool-body" }, output.el);
  const el = h(
    "details",
    { class: `tool tool-${name.toLowerCase()}`, "data-tool-call": id },
    h("summary", {}, status, h("span", { class: "tool-name" }, name), titleEl, summary),
    body,
  );
  const card: ToolCard = { el, status, summary, body, output, consent, name };
  a.container.append(el, consent);
  setStatus(card, "running");
  tools.set(id, card);
  if (name === "Task") {
    const sub = new AgentView(h("div", { class: "subagent" }));
    body.prepend(sub.container);
    card.subagent = sub;
  }
  return card;
}

/** Search results with their paths (and `path:line`) clickable. */
function linkedOutput(text: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  const lines = text.split("\n");
  lines.slice(0, 2000).forEach((line, i) => {
    const hit = /^([^\s:]+):(\d+)([:-].*)$/.exec(line);
    if (hit) frag.append(fileLink(hit[1]!, Number(hit[2])), hit[3]!);
    else if (/^[\w@.+-]+(\/[\w@.+-]+)*\.\w+$/.test(line) || /^[\w@.+-]+\/[\w@.+/-]+$/.test(line)) frag.append(fileLink(line));
    else frag.append(line);
    if (i < lines.length - 1) frag.append("\n");
  });
  if (lines.length > 2000) frag.append(`… ${lines.length - 2000} more lines`);
  return frag;
}

function findTaskCard(taskId: string): ToolCard | undefined {
  const byId = tools.get(taskId.replace(/^task-/, ""));
  if (byId) return byId;
  return [...tools.values()].reverse().find((c) => c.name === "Task" && c.el.dataset.status === "running");
}

// ------------------------------------------------------------------ inline requests
function diffView(text: string): HTMLElement {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
      : line.startsWith("-") && !line.startsWith("---") ? "del"
      : line.startsWith("@@") ? "hunk" : "ctx";
    pre.append(h("span", { class: cls }, line + "\n"));
  }
  return pre;
}

const openRequests = new Map<number, HTMLElement>();

function closeRequest(id: number, outcome: string): void {
  const el = openRequests.get(id);
  openRequests.delete(id);
  if (!el) return;
  el.classList.add("answered");
  el.querySelectorAll("button, textarea, input").forEach((b) => ((b as HTMLButtonElement).disabled = true));
  el.append(h("div", { class: "outcome muted" }, outcome));
}

function permissionCard(id: number, p: PermissionRequestParams, canDiff: boolean): void {
  hideWelcome();
  const card = tools.get(p.toolCallId);
  if (card) {
    setStatus(card, "asking");
    card.el.open = true;
  }
  const feedback = h("textarea", { class: "feedback", rows: "1", placeholder: "Feedback for the agent (optional, with Reject)" });
  const answer = (decision: "allow_once" | "allow_always" | "reject", label: string): void => {
    const text = feedback.value.trim();
    send({ type: "answer", id, result: decision === "reject" && text ? { decision, feedback: text } : { decision } });
    closeRequest(id, label + (decision === "reject" && text ? `: “${text}”` : ""));
    if (card) setStatus(card, decision === "reject" ? "error" : "running");
  };
  const buttons = h("div", { class: "buttons" });
  if (canDiff) buttons.append(h("button", { class: "show-diff", onclick: () => send({ type: "showDiff", id }) }, "Show diff"));
  if (p.options.includes("allow_once")) buttons.append(h("button", { class: "allow primary", onclick: () => answer("allow_once", "Allowed once") }, "Allow once"));
  if (p.options.includes("allow_always")) {
    const rule = p.alwaysRule ?? p.toolName;
    buttons.append(
      h("button", { class: "allow-always", title: `Stores the rule ${rule} for this project`, onclick: () => answer("allow_always", `Always allowed (${rule})`) }, `Always allow ${rule}`),
    );
  }
  buttons.append(h("button", { class: "reject", onclick: () => answer("reject", "Rejected") }, "Reject"));
  const el = h(
    "div",
    { class: "request permission", "data-request": String(id) },
    h("div", { class: "request-title" }, `Allow ${p.title}?`),
    p.contentKind === "diff" ? diffView(p.content) : h("pre", { class: "command" }, p.content),
    buttons,
    feedback,
  );
  openRequests.set(id, el);
  (card?.consent ?? agent(p.agentId).container).append(el);
  markDirty({ render() {} });
}

function questionCard(id: number, p: AskQuestionRequestParams): void {
  hideWelcome();
  const picks = new Map<string, Set<string>>();
  const others = new Map<string, HTMLInputElement>();
  const el = h("div", { class: "request question", "data-request": String(id) });
  for (const q of p.questions) {
    const chosen = new Set<string>();
    picks.set(q.question, chosen);
    const opts = h("div", { class: "options" });
    for (const o of q.options) {
      const btn = h("button", {
        class: "option",
        title: o.description ?? "",
        onclick: () => {
          if (!q.multiSelect) {
            chosen.clear();
            opts.querySelectorAll(".option").forEach((b) => b.classList.remove("chosen"));
          }
          if (chosen.has(o.label)) chosen.delete(o.label);
          else chosen.add(o.label);
          btn.classList.toggle("chosen", chosen.has(o.label));
        },
      }, h("strong", {}, o.label), o.description ? h("span", { class: "muted" }, ` — ${o.description}`) : null);
      opts.append(btn);
    }
    const other = h("input", { class: "other", placeholder: "Or answer in your own words" });
    others.set(q.question, other);
    el.append(h("div", { class: "q-header" }, q.header), h("div", { class: "q-text" }, q.question), opts, other);
  }
  el.append(
    h("div", { class: "buttons" }, h("button", {
      class: "primary",
      onclick: () => {
        const answers: Record<string, string> = {};
        for (const q of p.questions) {
          const own = others.get(q.question)!.value.trim();
          answers[q.question] = own || [...picks.get(q.question)!].join(", ");
        }
        send({ type: "answer", id, result: { answers } });
        closeRequest(id, "Answered");
      },
    }, "Answer")),
  );
  openRequests.set(id, el);
  agent(p.agentId).container.append(el);
  markDirty({ render() {} });
}

function planCard(id: number, p: PlanExitRequestParams): void {
  hideWelcome();
  const plan = new MarkdownBlock("plan");
  plan.set(p.planContent);
  const feedback = h("textarea", { class: "feedback", rows: "2", placeholder: "What should change in the plan? (with Keep planning)" });
  const decide = (decision: string, label: string): void => {
    const text = feedback.value.trim();
    send({ type: "answer", id, result: decision === "keepPlanning" && text ? { decision, feedback: text } : { decision } });
    closeRequest(id, label);
  };
  const el = h(
    "div",
    { class: "request plan-exit", "data-request": String(id) },
    h("div", { class: "request-title" }, "Plan ready — ", fileLink(p.planFilePath, undefined, "open the plan file")),
    plan.el,
    h("div", { class: "buttons" },
      h("button", { class: "primary", onclick: () => decide("startEditing", "Started editing") }, "Start editing"),
      h("button", { onclick: () => decide("clearContextAndStart", "Cleared the context and started") }, "Clear context and start"),
      h("button", { onclick: () => decide("keepPlanning", "Kept planning") }, "Keep planning")),
    feedback,
  );
  openRequests.set(id, el);
  agent(p.agentId).container.append(el);
}

// ------------------------------------------------------------------ server events
type Params = Record<string, unknown> & { agentId?: string };

function onEvent(method: string, p: Params): void {
  const a = agent(p.agentId);
  switch (method) {
    case "message:text:chunk":
      hideWelcome();
      a.answer().append(String(p.delta));
      break;
    case "message:thinking:chunk":
      hideWelcome();
      a.think().append(String(p.delta));
      break;
    case "message:complete":
      // Subagents stream no chunks: their text arrives whole, with the message.
      if (p.agentId && p.agentId !== "main" && typeof p.content === "string" && p.content && !a.text) {
        a.answer().set(p.content);
      }
      a.settle();
      break;
    case "tool:execution:start":
      hideWelcome();
      toolCard(a, String(p.toolCallId), String(p.toolName), String(p.title), (p.input as Record<string, unknown>) ?? {});
      break;
    case "tool:execution:update":
      tools.get(String(p.toolCallId))?.output.append(String(p.delta));
      break;
    case "tool:execution:complete":
    case "tool:execution:error": {
      const card = tools.get(String(p.toolCallId));
      if (!card) break;
      setStatus(card, method === "tool:execution:error" ? "error" : "done");
      if (p.summary) card.summary.textContent = String(p.summary);
      if (typeof p.content === "string" && (card.name === "Grep" || card.name === "Glob")) {
        card.output.el.replaceChildren(linkedOutput(p.content));
      } else if (typeof p.content === "string" && card.name !== "Task") {
        card.output.set(p.content);
      }
      if (method === "tool:execution:error") card.el.open = true;
      break;
    }
    case "task:agent:start": {
      const card = findTaskCard(String(p.taskId));
      if (card?.subagent) {
        agents.set(String(p.taskId), card.subagent);
        card.subagent.container.dataset.agent = String(p.taskId);
        card.subagent.container.prepend(h("div", { class: "agent-status muted" }, `${String(p.subagentType)} working…`));
      }
      break;
    }
    case "task:agent:end": {
      const card = findTaskCard(String(p.taskId));
      const status = card?.subagent?.container.querySelector(".agent-status");
      if (status) status.textContent = String(p.status);
      if (card && p.status !== "completed") setStatus(card, "error");
      break;
    }
    case "todos:update":
      renderTodos((p.todos as TodoItem[]) ?? []);
      break;
    case "session:error": {
      const err = p.error as { message?: string; code?: string } | undefined;
      errorBox(`${String(p.type)}: ${err?.message ?? "error"}`, a.container);
      break;
    }
    case "config:no_models":
      errorBox(`${String(p.message)} ${String(p.suggestion ?? "")}`, log, true);
      break;
    case "session:interrupted":
      notice("Interrupted.", "notice interrupted", a.container);
      main.settle();
      break;
    case "compact:exec":
      notice(`Context compacted (${String(p.strategy)}): ${formatTokens(Number(p.tokenBefore))} → ${formatTokens(Number(p.tokenCompact))} tokens${p.errMsg ? ` — ${String(p.errMsg)}` : ""}`);
      break;
    case "session:cleared":
      notice("Context cleared.");
      break;
    case "state:update":
      if (p.state === "processing" && (!p.agentId || p.agentId === "main")) {
        if (expectTurnStart > 0) expectTurnStart--;
        else startQueuedTurn();
      }
      break;
    case "mode:update":
      state.mode = p.mode as ChatState["mode"];
      renderState();
      break;
    case "file:reference": {
      const refs = (p.references as Array<{ name: string; error?: string | null }>) ?? [];
      const el = h("div", { class: "notice refs" }, "Attached: ");
      refs.forEach((r, i) => {
        if (i) el.append(", ");
        el.append(r.error ? h("span", { class: "ref-error", title: r.error }, r.name) : fileLink(r.name));
      });
      hideWelcome();
      log.append(el);
      break;
    }
  }
}

function startQueuedTurn(): void {
  const next = queueEl.firstElementChild as HTMLElement | null;
  if (!next) return;
  next.classList.remove("queued");
  next.querySelector(".tag")?.remove();
  main.settle();
  log.append(next);
  stickToBottom = true;
  markDirty({ render() {} });
}

function renderTodos(todos: TodoItem[]): void {
  todosEl.replaceChildren();
  if (!todos.length) {
    todosEl.classList.add("hidden");
    return;
  }
  todosEl.classList.remove("hidden");
  const mark = { completed: "☑", in_progress: "▶", pending: "☐" } as Record<string, string>;
  for (const t of todos) {
    todosEl.append(h("div", { class: `todo ${t.status}` }, `${mark[t.status] ?? "☐"} ${t.status === "in_progress" ? t.activeForm : t.content}`));
  }
}

function renderState(): void {
  modeBtn.textContent = state.mode;
  modeBtn.classList.toggle("plan", state.mode === "Plan");
  permSelect.value = state.permissionMode;
  stopBtn.classList.toggle("hidden", !state.busy);
  steerBtn.classList.toggle("hidden", !state.busy);
  sendBtn.textContent = state.busy ? "Queue" : "Send";
  sendBtn.title = state.busy ? "Send after the running turn (Enter)" : "Send (Enter)";
  usageText(state.usage, state.totals);
  renderModels();
  headerTitle.textContent = state.title || "New chat";
  app.classList.toggle("busy", state.busy);
  if (state.sessionId) app.dataset.session = state.sessionId;
  else delete app.dataset.session;
}

function renderModels(): void {
  const current = state.model ?? "";
  const listed = models.some((m) => m.name === current);
  const options = models.map((m) => {
    const marks = [m.images ? "images" : "", m.thinking ? "thinking" : ""].filter(Boolean).join(", ");
    return h("option", { value: m.name, title: `${m.provider}/${m.model}` }, marks ? `${m.name} (${marks})` : m.name);
  });
  // A session on a model outside the list (a provider/model spec) still shows it.
  if (current && !listed) options.unshift(h("option", { value: current }, current));
  modelSelect.replaceChildren(...options);
  if (current) modelSelect.value = current;
  modelSelect.classList.toggle("hidden", !features.models || models.length === 0);
}

/** Rewind and fork from one of the user's messages (offered when the server supports them). */
function messageActions(messageId: string): HTMLElement {
  const bar = h("span", { class: "message-actions" });
  if (features.rewind) {
    const choices: Array<[RestoreWhat, string, string]> = [
      ["both", "Rewind", "Go back to before this message: files and conversation"],
      ["code", "Rewind code", "Put the files back as they were before this message; keep the conversation"],
      ["conversation", "Rewind chat", "Go back to before this message in the conversation; keep the files"],
    ];
    for (const [restore, label, title] of choices) {
      bar.append(h("button", { class: `rewind-${restore}`, title, onclick: () => send({ type: "rewind", messageId, restore }) }, label));
    }
  }
  if (features.fork) {
    bar.append(h("button", { class: "fork", title: "Continue from before this message in a new chat", onclick: () => send({ type: "fork", messageId }) }, "Fork"));
  }
  return bar;
}

function userBubble(text: string, images: Array<{ name?: string; mediaType: string; path?: string | null }>, attrs: Record<string, string>, tag = ""): HTMLElement {
  const el = h("div", { class: `user ${tag}`.trim(), ...attrs }, tag ? h("span", { class: "tag" }, tag) : null, h("span", { class: "text" }, text));
  for (const img of images) el.append(h("span", { class: "image-chip" }, `image: ${img.name ?? img.path ?? img.mediaType}`));
  return el;
}

/** A rewind that found files changed since the agent wrote them: overwrite them, or not. */
function conflictCard(messageId: string | undefined, restore: RestoreWhat, conflicts: RewindConflict[]): void {
  hideWelcome();
  const list = h("ul", { class: "conflicts" });
  for (const c of conflicts) list.append(h("li", {}, fileLink(c.path), h("span", { class: "muted" }, ` — ${c.reason}`)));
  const el = h("div", { class: "request rewind-conflict" });
  const close = (outcome: string): void => {
    el.classList.add("answered");
    el.querySelectorAll("button").forEach((b) => (b.disabled = true));
    el.append(h("div", { class: "outcome muted" }, outcome));
  };
  el.append(
    h("div", { class: "request-title" }, "These files changed after the agent wrote them. Rewinding overwrites those changes:"),
    list,
    h("div", { class: "buttons" },
      h("button", {
        class: "overwrite primary",
        onclick: () => {
          close("Overwritten");
          send(messageId ? { type: "rewind", messageId, restore, force: true } : { type: "redo", force: true });
        },
      }, messageId ? "Overwrite and rewind" : "Overwrite and redo"),
      h("button", { class: "cancel", onclick: () => close(`${messageId ? "Rewind" : "Redo"} cancelled: nothing changed`) }, "Cancel")),
  );
  log.append(el);
  stickToBottom = true;
  markDirty({ render() {} });
}

/** A turn's changed files, each opening its diff; "Review changes" opens the whole patch. */
function turnDiffCard(id: number, files: ChangedFile[]): void {
  hideWelcome();
  const list = h("div", { class: "diff-files" });
  for (const f of files) {
    list.append(
      h("button", { class: `diff-file ${f.status}`, title: `Open the change of ${f.path}`, onclick: () => send({ type: "reviewChanges", id, path: f.path }) },
        h("span", { class: "path" }, f.path), h("span", { class: "add" }, ` +${f.additions}`), h("span", { class: "del" }, ` −${f.deletions}`)),
    );
  }
  const label = `Review changes (${files.length} file${files.length === 1 ? "" : "s"})`;
  log.append(h("div", { class: "turn-diff" }, h("button", { class: "review", onclick: () => send({ type: "reviewChanges", id }) }, label), list));
  markDirty({ render() {} });
}

/** A conversation as the server keeps it (`session/messages`): a resumed, rewound or forked chat. */
function renderConversation(messages: TranscriptMessage[]): void {
  hideWelcome();
  for (const m of messages) {
    const text = (m.content ?? []).map((b) => b.text ?? "").join("");
    const images = (m.content ?? [])
      .filter((b) => b.type === "image")
      .map((b) => ({ mediaType: b.mediaType ?? "image", path: b.path }));
    if (m.kind === "summary") {
      const block = new MarkdownBlock("summary past");
      block.set(text);
      log.append(h("details", { class: "summary-of-earlier" }, h("summary", {}, "Summary of the earlier conversation"), block.el));
      continue;
    }
    if (m.kind === "notice") {
      if (text) log.append(h("div", { class: "notice past" }, text));
      continue;
    }
    if (m.role === "user") {
      if (!text && images.length === 0) continue;
      const bubble = userBubble(text, images, { "data-message-id": m.id });
      bubble.classList.add("past");
      if (m.kind === "prompt" && (features.rewind || features.fork)) bubble.append(messageActions(m.id));
      log.append(bubble);
      main.settle();
      continue;
    }
    if (m.thinking) {
      main.think().set(m.thinking);
    }
    if (text) {
      const block = new MarkdownBlock("answer past");
      block.set(text);
      log.append(block.el);
    }
    for (const call of m.toolCalls ?? []) {
      const card = toolCard(main, call.id, call.name, call.title, call.input ?? {});
      setStatus(card, call.status === "completed" ? "done" : call.status === "running" ? "running" : "error");
      if (call.result) card.output.set(call.result);
    }
    main.settle();
  }
  stickToBottom = true;
  markDirty({ render() {} });
}

// ------------------------------------------------------------------ input
function submit(delivery?: "followUp" | "steer"): void {
  const text = input.value.trim();
  if (!text && !attachments.length) return;
  closePopup();
  if (text && inputHistory[0] !== text) inputHistory.unshift(text);
  historyPos = -1;
  input.value = "";
  autosize();
  awaitingFirstToken = true;
  const images = attachments;
  setAttachments([]);
  send({ type: "send", text, delivery, ...(images.length ? { images } : {}) });
}

function setAttachments(items: ImageAttachment[]): void {
  attachments = items;
  attachmentsEl.replaceChildren(
    ...items.map((a, i) =>
      h("span", { class: "attachment", title: a.mediaType }, `image: ${a.name}`,
        h("button", { class: "remove", title: "Remove", onclick: () => setAttachments(attachments.filter((_, j) => j !== i)) }, "×")),
    ),
  );
  attachmentsEl.classList.toggle("hidden", items.length === 0);
}

/** Images the provider APIs take; anything else pasted or dropped is refused in place. */
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

function attachFiles(files: Iterable<File>): boolean {
  let any = false;
  for (const file of files) {
    if (!file.type.startsWith("image/")) continue;
    any = true;
    if (!IMAGE_TYPES.includes(file.type)) {
      notice(`${file.name || "That image"} is ${file.type}: only PNG, JPEG, GIF and WebP images can be sent.`);
      continue;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      notice(`${file.name || "That image"} is larger than 5 MB, the limit of the model APIs.`);
      continue;
    }
    const current = models.find((m) => m.name === state.model);
    if (current && !current.images) {
      notice(`${current.name} does not take images: pick a model that does (marked "images" in the picker).`, "notice no-images");
      continue;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      const data = url.slice(url.indexOf(",") + 1);
      setAttachments([...attachments, { name: file.name || `pasted.${file.type.slice(6)}`, mediaType: file.type, data }]);
    };
    reader.readAsDataURL(file);
  }
  return any;
}

input.addEventListener("paste", (ev) => {
  const files = ev.clipboardData?.files;
  if (files && files.length && attachFiles(Array.from(files))) ev.preventDefault();
});
input.addEventListener("dragover", (ev) => {
  if (ev.dataTransfer?.types.includes("Files")) ev.preventDefault();
});
input.addEventListener("drop", (ev) => {
  const files = ev.dataTransfer?.files;
  if (files && files.length && attachFiles(Array.from(files))) ev.preventDefault();
});

function autosize(): void {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

let completions: Completion[] = [];
let selected = 0;
let completionToken: { kind: "file" | "command"; start: number; query: string } | undefined;
let completeTimer: number | undefined;

function currentToken(): typeof completionToken {
  const caret = input.selectionStart ?? 0;
  const before = input.value.slice(0, caret);
  const cmd = /^\/(\S*)$/.exec(before);
  if (cmd) return { kind: "command", start: 0, query: cmd[1]! };
  const file = /(^|\s)@([^\s@"']*)$/.exec(before);
  if (file) return { kind: "file", start: caret - file[2]!.length - 1, query: file[2]! };
  return undefined;
}

function closePopup(): void {
  popup.classList.add("hidden");
  completions = [];
  completionToken = undefined;
}

function renderPopup(): void {
  popup.replaceChildren();
  if (!completions.length) {
    popup.classList.add("hidden");
    return;
  }
  popup.classList.remove("hidden");
  completions.forEach((c, i) => {
    popup.append(
      h("div", {
        class: `completion${i === selected ? " selected" : ""}`,
        role: "option",
        onmousedown: (ev: Event) => {
          ev.preventDefault();
          selected = i;
          acceptCompletion();
        },
      }, h("span", { class: "label" }, c.label), c.detail ? h("span", { class: "muted" }, ` ${c.detail}`) : null),
    );
  });
}

function acceptCompletion(): void {
  const c = completions[selected];
  const tok = completionToken;
  if (!c || !tok) return;
  const caret = input.selectionStart ?? input.value.length;
  input.value = input.value.slice(0, tok.start) + c.insert + input.value.slice(caret);
  const pos = tok.start + c.insert.length;
  input.setSelectionRange(pos, pos);
  closePopup();
  input.focus();
}

input.addEventListener("input", () => {
  autosize();
  const tok = currentToken();
  if (!tok) {
    closePopup();
    return;
  }
  completionToken = tok;
  if (completeTimer) clearTimeout(completeTimer);
  completeTimer = window.setTimeout(() => send({ type: "complete", kind: tok.kind, query: tok.query }), 60);
});

input.addEventListener("keydown", (ev) => {
  const popupOpen = !popup.classList.contains("hidden") && completions.length > 0;
  if (popupOpen) {
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      selected = (selected + (ev.key === "ArrowDown" ? 1 : completions.length - 1)) % completions.length;
      renderPopup();
      return;
    }
    if (ev.key === "Enter" || ev.key === "Tab") {
      ev.preventDefault();
      acceptCompletion();
      return;
    }
    if (ev.key === "Escape") {
      closePopup();
      return;
    }
  }
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    submit(ev.altKey && state.busy ? "steer" : undefined);
    return;
  }
  if (ev.key === "Escape" && state.busy) {
    send({ type: "stop" });
    return;
  }
  const atStart = input.selectionStart === 0 && input.selectionEnd === 0;
  const atEnd = input.selectionStart === input.value.length;
  if (ev.key === "ArrowUp" && (atStart || !input.value) && inputHistory.length) {
    ev.preventDefault();
    if (historyPos === -1) draft = input.value;
    historyPos = Math.min(historyPos + 1, inputHistory.length - 1);
    input.value = inputHistory[historyPos]!;
    autosize();
  } else if (ev.key === "ArrowDown" && atEnd && historyPos >= 0) {
    ev.preventDefault();
    historyPos--;
    input.value = historyPos >= 0 ? inputHistory[historyPos]! : draft;
    autosize();
  }
});

sendBtn.addEventListener("click", () => submit());
steerBtn.addEventListener("click", () => submit("steer"));
stopBtn.addEventListener("click", () => send({ type: "stop" }));
modeBtn.addEventListener("click", () => send({ type: "setMode", mode: state.mode === "Agent" ? "Plan" : "Agent" }));
modelSelect.addEventListener("change", () => send({ type: "setModel", model: modelSelect.value }));
permSelect.addEventListener("change", () => send({ type: "setPermissionMode", permissionMode: permSelect.value as ChatState["permissionMode"] }));

document.addEventListener("click", (ev) => {
  const a = (ev.target as HTMLElement).closest("a");
  if (a && !a.classList.contains("file-link")) {
    ev.preventDefault();
    const href = a.getAttribute("href");
    if (href) send({ type: "openLink", href });
  }
});

// ------------------------------------------------------------------ messages from the host
function handle(msg: ToWebview): void {
  switch (msg.type) {
    case "batch":
      msg.items.forEach(handle);
      break;
    case "event":
      onEvent(msg.method, msg.params);
      break;
    case "user": {
      hideWelcome();
      const attrs = { "data-local": String(msg.localId) };
      if (msg.delivery === "followUp") {
        queueEl.append(userBubble(msg.text, msg.images, attrs, "queued"));
        break;
      }
      if (msg.delivery === "prompt") expectTurnStart++;
      main.settle();
      log.append(userBubble(msg.text, msg.images, attrs, msg.delivery === "steer" ? "steer" : ""));
      stickToBottom = true;
      markDirty({ render() {} });
      break;
    }
    case "restoreInput":
      restoredInput = msg.text;
      input.value = msg.text;
      autosize();
      if (msg.images.length) setAttachments(msg.images);
      input.focus();
      break;
    case "turnEnd":
      main.settle();
      if (msg.stopReason === "error" && msg.error) errorBox(msg.error);
      if (msg.stopReason === "max_turns") notice("Stopped: the turn reached its limit of model calls.");
      turnEndedPendingIdle = true;
      markDirty({ render() {} });
      break;
    case "permission":
      permissionCard(msg.id, msg.params, msg.canDiff);
      break;
    case "question":
      questionCard(msg.id, msg.params);
      break;
    case "planExit":
      planCard(msg.id, msg.params);
      break;
    case "requestCancelled":
      closeRequest(msg.id, "Withdrawn by the agent (the turn was stopped).");
      break;
    case "completions":
      if (completionToken && completionToken.kind === msg.kind && completionToken.query === msg.query) {
        completions = msg.items;
        selected = 0;
        renderPopup();
      }
      break;
    case "sessions":
      sessions = msg.items;
      if (welcome.isConnected) renderWelcome();
      renderSessionsOverlay();
      break;
    case "server":
      serverEl.className = `server-status ${msg.state}`;
      serverEl.textContent =
        msg.state === "ready" ? "" : msg.state === "starting" ? "Starting sema-rpc…" : msg.state === "restarting" ? "Restarting sema-rpc…" : msg.message ?? msg.state;
      serverEl.classList.toggle("hidden", msg.state === "ready");
      break;
    case "state":
      state = msg.state;
      renderState();
      break;
    case "features":
      features = msg.features;
      models = msg.models;
      renderModels();
      break;
    case "inputHistory":
      inputHistory = [...new Set([...inputHistory, ...msg.items])];
      break;
    case "messageId": {
      const bubble = document.querySelector<HTMLElement>(`.user[data-local="${msg.localId}"]`);
      if (!bubble) break;
      bubble.dataset.messageId = msg.messageId;
      if (features.rewind || features.fork) bubble.append(messageActions(msg.messageId));
      break;
    }
    case "rewound": {
      const what = { both: "the files and the conversation", code: "the files", conversation: "the conversation" }[msg.restore];
      const files = msg.restoredFiles.length ? ` Restored: ${msg.restoredFiles.join(", ")}.` : "";
      const el = notice(`Rewound ${what} to before that message.${files} `, "notice rewound");
      // Until something else happens, the rewind can be undone.
      el.append(h("button", { class: "redo", title: "Put back what this rewind changed", onclick: () => send({ type: "redo" }) }, "Redo"));
      break;
    }
    case "redone": {
      if (restoredInput !== undefined && input.value === restoredInput) {
        input.value = "";
        autosize();
      }
      const files = msg.restoredFiles.length ? ` Restored: ${msg.restoredFiles.join(", ")}.` : "";
      notice(`Redone: the rewind is undone.${files}`, "notice redone");
      break;
    }
    case "rewindConflicts":
      conflictCard(msg.messageId, msg.restore, msg.conflicts);
      break;
    case "turnDiff":
      turnDiffCard(msg.id, msg.files);
      break;
    case "messages":
      renderConversation(msg.messages);
      break;
    case "reset":
      resetTranscript();
      if (msg.notice) notice(msg.notice);
      if (msg.resumed) {
        hideWelcome();
        log.append(
          h("div", { class: "resumed" }, h("strong", {}, "Resumed: "), msg.resumed.title, h("span", { class: "muted" }, ` (${msg.resumed.messageCount} messages earlier)`)),
        );
      }
      break;
    case "error":
      errorBox(msg.message);
      break;
    case "notice":
      notice(msg.message);
      break;
  }
}

window.addEventListener("message", (ev: MessageEvent<ToWebview>) => handle(ev.data));
renderWelcome();
renderState();
send({ type: "ready" });
input.focus();
