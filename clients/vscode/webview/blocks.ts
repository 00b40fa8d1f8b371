// Render scheduling and the blocks that grow while a turn streams. Streams are rendered in
// batches, once per animation frame, and only the block that is growing is re-rendered (its
// settled paragraphs are rendered once).
import { h } from "./dom";
import { send } from "./host";
import { renderMarkdown, stablePrefix } from "./markdown";
import { view } from "./state";
import { ui } from "./ui";

interface Renderable {
  render(): void;
}
const dirty = new Set<Renderable>();

export function markDirty(r: Renderable): void {
  dirty.add(r);
  if (!view.frameRequested) {
    view.frameRequested = true;
    requestAnimationFrame(renderFrame);
  }
}

/** A frame for something added outside a block (it scrolls the log and can end a turn). */
export function repaint(): void {
  markDirty({ render() {} });
}

/** Forget the pending renders (the transcript they belong to is gone). */
export function dropPendingRenders(): void {
  dirty.clear();
}

function renderFrame(): void {
  view.frameRequested = false;
  const now = performance.now();
  const later: Renderable[] = [];
  for (const r of dirty) {
    // A block whose last render was slow waits a few frames: the view keeps up with any
    // stream rate, the text shows up at a lower frame rate, never later than the turn.
    if (r instanceof MarkdownBlock && now < r.nextRenderAt && !view.turnEndedPendingIdle) later.push(r);
    else r.render();
  }
  dirty.clear();
  for (const r of later) markDirty(r);
  if (view.stickToBottom) ui.log.scrollTop = ui.log.scrollHeight;
  if (view.turnEndedPendingIdle && later.length === 0) {
    view.turnEndedPendingIdle = false;
    send({ type: "rendered", what: "idle", at: Date.now(), count: lastAnswerLength() });
  }
}

function lastAnswerLength(): number {
  const answers = ui.log.querySelectorAll(".md.answer");
  return answers.length ? (answers[answers.length - 1] as HTMLElement).innerText.length : 0;
}

/** Markdown that grows: settled paragraphs are frozen once, only the tail re-renders. */
export class MarkdownBlock implements Renderable {
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
    if (view.awaitingFirstToken && this.el.classList.contains("answer") && this.text) {
      view.awaitingFirstToken = false;
      send({ type: "rendered", what: "firstToken", at: Date.now() });
    }
  }
}

/** Plain text that grows (tool output): appended, never re-rendered. */
export class TextStream implements Renderable {
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

/** One agent's part of the transcript (the main agent's, or a subagent's inside its Task card). */
export class AgentView {
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
