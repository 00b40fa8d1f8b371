// The transcript: user bubbles, answers, tool cards, notices, a turn's changed files, and
// a conversation read back from the server.
import type { TranscriptMessage } from "../src/client";
import type { ChangedFile, RestoreWhat, ToWebview } from "../src/messages";
import { AgentView, MarkdownBlock, TextStream, dropPendingRenders, repaint } from "./blocks";
import { fileLink, h } from "./dom";
import { send } from "./host";
import { renderWelcome } from "./sessions";
import { view } from "./state";
import { ui } from "./ui";

export interface ToolCard {
  el: HTMLDetailsElement;
  status: HTMLElement;
  summary: HTMLElement;
  body: HTMLElement;
  output: TextStream;
  consent: HTMLElement;
  name: string;
  subagent?: AgentView;
  /** Drawn from the earlier conversation (`session/messages`), not from the stream. */
  past?: boolean;
}

/** The main agent's view of the transcript (a new one after each reset). */
export function mainAgent(): AgentView {
  let main = view.agents.get("main");
  if (!main) {
    main = new AgentView(ui.log);
    view.agents.set("main", main);
  }
  return main;
}

/** The view of the agent an event names (`agentId`): a running subagent's, else the main one. */
export function agent(id: string | undefined): AgentView {
  return view.agents.get(id ?? "main") ?? mainAgent();
}

export function hideWelcome(): void {
  ui.welcome.remove();
}

export function resetTranscript(): void {
  ui.log.replaceChildren(ui.welcome);
  ui.queue.replaceChildren();
  view.expectTurnStart = 0;
  view.agents.clear();
  view.tools.clear();
  ui.todos.classList.add("hidden");
  dropPendingRenders();
  renderWelcome();
}

export function notice(text: string, cls = "notice", where: HTMLElement = ui.log): HTMLElement {
  hideWelcome();
  const el = h("div", { class: cls }, text);
  where.append(el);
  repaint();
  return el;
}

export function errorBox(message: string, where: HTMLElement = ui.log, withKey = false): void {
  hideWelcome();
  const el = h("div", { class: "error", role: "alert" }, h("span", {}, message));
  if (withKey) el.append(h("button", { onclick: () => send({ type: "setApiKey" }) }, "Set API Key"));
  where.append(el);
  repaint();
}

// ------------------------------------------------------------------ tool cards
const STATUS = { running: "⟳", asking: "?", done: "✓", error: "✗" } as const;

export function setStatus(card: ToolCard, status: keyof typeof STATUS): void {
  card.status.textContent = STATUS[status];
  card.el.dataset.status = status;
}

function pathOf(input: Record<string, unknown>): string | undefined {
  for (const key of ["file_path", "path", "notebook_path"]) {
    if (typeof input[key] === "string") return input[key] as string;
  }
  return undefined;
}

export function toolCard(a: AgentView, id: string, name: string, title: string, input: Record<string, unknown>): ToolCard {
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
  view.tools.set(id, card);
  if (name === "Task") {
    const sub = new AgentView(h("div", { class: "subagent" }));
    body.prepend(sub.container);
    card.subagent = sub;
  }
  return card;
}

/** Search results with their paths (and `path:line`) clickable. */
export function linkedOutput(text: string): DocumentFragment {
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

export function findTaskCard(taskId: string): ToolCard | undefined {
  const byId = view.tools.get(taskId.replace(/^task-/, ""));
  if (byId) return byId;
  return [...view.tools.values()].reverse().find((c) => c.name === "Task" && c.el.dataset.status === "running");
}

// ------------------------------------------------------------------ the user's messages
function userBubble(text: string, images: Array<{ name?: string; mediaType: string; path?: string | null }>, attrs: Record<string, string>, tag = ""): HTMLElement {
  const el = h("div", { class: `user ${tag}`.trim(), ...attrs }, tag ? h("span", { class: "tag" }, tag) : null, h("span", { class: "text" }, text));
  for (const img of images) el.append(h("span", { class: "image-chip" }, `image: ${img.name ?? img.path ?? img.mediaType}`));
  return el;
}

/** A message the user sent: a prompt or a steer in the transcript, a follow-up in the queue. */
export function showUserMessage(msg: Extract<ToWebview, { type: "user" }>): void {
  hideWelcome();
  const attrs = { "data-local": String(msg.localId) };
  if (msg.delivery === "followUp") {
    ui.queue.append(userBubble(msg.text, msg.images, attrs, "queued"));
    return;
  }
  if (msg.delivery === "prompt") view.expectTurnStart++;
  mainAgent().settle();
  ui.log.append(userBubble(msg.text, msg.images, attrs, msg.delivery === "steer" ? "steer" : ""));
  view.stickToBottom = true;
  repaint();
}

/** A queued follow-up's turn started: its bubble moves from the queue into the transcript. */
export function startQueuedTurn(): void {
  const next = ui.queue.firstElementChild as HTMLElement | null;
  if (!next) return;
  next.classList.remove("queued");
  next.querySelector(".tag")?.remove();
  mainAgent().settle();
  ui.log.append(next);
  view.stickToBottom = true;
  repaint();
}

/** The server's id of a sent message: its bubble can now be rewound to or forked from. */
export function setMessageId(localId: number, messageId: string): void {
  const bubble = document.querySelector<HTMLElement>(`.user[data-local="${localId}"]`);
  if (!bubble) return;
  bubble.dataset.messageId = messageId;
  if (view.features.rewind || view.features.fork) bubble.append(messageActions(messageId));
}

/** Rewind and fork from one of the user's messages (offered when the server supports them). */
function messageActions(messageId: string): HTMLElement {
  const bar = h("span", { class: "message-actions" });
  if (view.features.rewind) {
    const choices: Array<[RestoreWhat, string, string]> = [
      ["both", "Rewind", "Go back to before this message: files and conversation"],
      ["code", "Rewind code", "Put the files back as they were before this message; keep the conversation"],
      ["conversation", "Rewind chat", "Go back to before this message in the conversation; keep the files"],
    ];
    for (const [restore, label, title] of choices) {
      bar.append(h("button", { class: `rewind-${restore}`, title, onclick: () => send({ type: "rewind", messageId, restore }) }, label));
    }
  }
  if (view.features.fork) {
    bar.append(h("button", { class: "fork", title: "Continue from before this message in a new chat", onclick: () => send({ type: "fork", messageId }) }, "Fork"));
  }
  return bar;
}

// ------------------------------------------------------------------ whole pieces
/** The line that heads a resumed chat. */
export function showResumed(title: string, messageCount: number): void {
  hideWelcome();
  ui.log.append(
    h("div", { class: "resumed" }, h("strong", {}, "Resumed: "), title, h("span", { class: "muted" }, ` (${messageCount} messages earlier)`)),
  );
}

/** A turn's changed files, each opening its diff; "Review changes" opens the whole patch. */
export function turnDiffCard(id: number, files: ChangedFile[]): void {
  hideWelcome();
  const list = h("div", { class: "diff-files" });
  for (const f of files) {
    list.append(
      h("button", { class: `diff-file ${f.status}`, title: `Open the change of ${f.path}`, onclick: () => send({ type: "reviewChanges", id, path: f.path }) },
        h("span", { class: "path" }, f.path), h("span", { class: "add" }, ` +${f.additions}`), h("span", { class: "del" }, ` −${f.deletions}`)),
    );
  }
  const label = `Review changes (${files.length} file${files.length === 1 ? "" : "s"})`;
  ui.log.append(h("div", { class: "turn-diff" }, h("button", { class: "review", onclick: () => send({ type: "reviewChanges", id }) }, label), list));
  repaint();
}

/** A conversation as the server keeps it (`session/messages`): a resumed, rewound or forked chat. */
export function renderConversation(messages: TranscriptMessage[]): void {
  hideWelcome();
  const main = mainAgent();
  for (const m of messages) {
    const text = (m.content ?? []).map((b) => b.text ?? "").join("");
    const images = (m.content ?? [])
      .filter((b) => b.type === "image")
      .map((b) => ({ mediaType: b.mediaType ?? "image", path: b.path }));
    if (m.kind === "summary") {
      const block = new MarkdownBlock("summary past");
      block.set(text);
      ui.log.append(h("details", { class: "summary-of-earlier" }, h("summary", {}, "Summary of the earlier conversation"), block.el));
      continue;
    }
    if (m.kind === "notice") {
      if (text) ui.log.append(h("div", { class: "notice past" }, text));
      continue;
    }
    if (m.role === "user") {
      if (!text && images.length === 0) continue;
      const bubble = userBubble(text, images, { "data-message-id": m.id });
      bubble.classList.add("past");
      if (m.kind === "prompt" && (view.features.rewind || view.features.fork)) bubble.append(messageActions(m.id));
      ui.log.append(bubble);
      main.settle();
      continue;
    }
    if (m.thinking) {
      main.think().set(m.thinking);
    }
    if (text) {
      const block = new MarkdownBlock("answer past");
      block.set(text);
      ui.log.append(block.el);
    }
    for (const call of m.toolCalls ?? []) {
      const card = toolCard(main, call.id, call.name, call.title, call.input ?? {});
      card.past = true;
      setStatus(card, call.status === "completed" ? "done" : call.status === "running" ? "running" : "error");
      if (call.result) card.output.set(call.result);
    }
    main.settle();
  }
  view.stickToBottom = true;
  repaint();
}
