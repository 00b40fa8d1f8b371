// Host→webview messages: queued until the webview's script listens, sent in batches.
import type { ToWebview, WireEvent } from "./messages";

/** Batches are sent at most this often (streaming never floods the webview). */
export const FLUSH_MS = 16;

/** Append `next`'s delta to `last` when both are text (or thinking) chunks of one agent. */
export function mergeDelta(last: WireEvent, next: WireEvent): boolean {
  if (next.method !== "message:text:chunk" && next.method !== "message:thinking:chunk") return false;
  if (last.method !== next.method || last.params.agentId !== next.params.agentId) return false;
  last.params = { ...last.params, delta: String(last.params.delta) + String(next.params.delta) };
  return true;
}

/**
 * The chat's messages to its webview, in order. Anything posted before the webview's script
 * listens would be lost, so nothing is delivered until `ready`; consecutive text deltas of one
 * agent are merged into one message.
 */
export class WebviewOutbox {
  private queue: ToWebview[] = [];
  private timer: NodeJS.Timeout | undefined;
  private listening = false;

  /** `deliver` sends one batch; it is not called while there is no webview to take it. */
  constructor(private readonly deliver: (batch: ToWebview) => boolean) {}

  post(msg: ToWebview): void {
    const last = this.queue[this.queue.length - 1];
    if (msg.type === "event" && last?.type === "event" && mergeDelta(last, msg)) return;
    this.queue.push(msg);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** The webview's script listens: `first` goes ahead of everything queued so far. */
  ready(first: ToWebview): void {
    this.listening = true;
    this.queue.unshift(first);
  }

  /** The webview is gone (or replaced): hold messages until its successor listens. */
  unready(): void {
    this.listening = false;
  }

  flush(): void {
    this.timer = undefined;
    if (!this.listening || this.queue.length === 0) return;
    const items = this.queue;
    if (this.deliver({ type: "batch", items })) this.queue = [];
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
