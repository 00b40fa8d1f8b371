// "Review changes" of a turn: the files the main agent's turn changed (`turn:diff`), each
// opening its change in the editor's diff view.
import * as path from "node:path";
import * as vscode from "vscode";
import type { TurnDiff } from "./client";
import type { ProposedContentProvider } from "./diff";
import type { ChangedFile } from "./messages";
import { readText, resolveInWorkspace, reversePatch } from "./util";

/** The turn's files as the chat's card lists them (their diffs stay on the host). */
export function changedFiles(turn: TurnDiff): ChangedFile[] {
  return turn.files.map((f) => ({ path: f.path, status: f.status, additions: f.additions, deletions: f.deletions }));
}

/** The turns' diffs the chat has shown a card for, by the card's id. */
export class TurnDiffs {
  private readonly turns = new Map<number, TurnDiff>();

  constructor(private readonly proposed: ProposedContentProvider) {}

  /** Keep a `turn:diff` under `id`; false when it gets no card (a subagent's, or nothing changed). */
  add(id: number, turn: TurnDiff): boolean {
    if (turn.agentId && turn.agentId !== "main") return false;
    if (!turn.files.length) return false;
    this.turns.set(id, turn);
    return true;
  }

  /**
   * One file's change in the diff editor (its content before the turn, rebuilt from the
   * diff, against the file now), or without `file` the turn's whole patch as a read-only
   * diff document. `base` is the session's folder.
   */
  async review(id: number, base: string, file?: string): Promise<void> {
    const turn = this.turns.get(id);
    if (!turn) return;
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
}
