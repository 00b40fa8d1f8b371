// Figures for bench/bench_vscode.mjs: kept only when SEMA_VSCODE_BENCH_FILE names a file,
// to which each figure is appended as a JSON line.
import { appendFileSync } from "node:fs";
import type { FromWebview } from "./messages";

export class ChatBench {
  private readonly file = process.env.SEMA_VSCODE_BENCH_FILE;
  private sentAt = 0;
  private deltas = 0;
  private firstChunkAt = 0;
  private turnEndAt = 0;

  /** A prompt was sent: its turn's figures start. */
  sent(): void {
    this.sentAt = Date.now();
    this.deltas = 0;
    this.firstChunkAt = 0;
  }

  /** A text delta of the main agent arrived from the server. */
  chunk(): void {
    if (this.deltas++ === 0) this.firstChunkAt = Date.now();
  }

  turnEnded(): void {
    this.turnEndAt = Date.now();
  }

  /** The webview says when it drew the first token, and when the turn's text was all drawn. */
  rendered(msg: Extract<FromWebview, { type: "rendered" }>): void {
    if (msg.what === "firstToken" && this.sentAt) {
      this.write({ figure: "sendToFirstTokenRendered", ms: msg.at - this.sentAt });
    }
    if (msg.what === "idle" && this.firstChunkAt) {
      this.write({
        figure: "streamRendered",
        deltas: this.deltas,
        firstChunkToRenderedMs: msg.at - this.firstChunkAt,
        turnEndToRenderedMs: msg.at - this.turnEndAt,
        chars: msg.count,
      });
    }
  }

  private write(figure: Record<string, unknown>): void {
    if (this.file) appendFileSync(this.file, JSON.stringify(figure) + "\n");
  }
}
