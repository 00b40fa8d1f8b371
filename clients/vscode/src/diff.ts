// "Show diff" for a proposed Write/Edit: VS Code's diff editor, current file vs. proposed content.
import * as path from "node:path";
import * as vscode from "vscode";
import { proposedContent, resolveInWorkspace } from "./util";

export const PROPOSED_SCHEME = "sema-proposed";

/** Read-only documents holding proposed contents, addressed by a counter in the URI. */
export class ProposedContentProvider implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.query) ?? "";
  }

  /** A URI showing `content` under the file's name (so the editor picks the language). */
  add(filePath: string, content: string): vscode.Uri {
    const key = String(this.next++);
    this.contents.set(key, content);
    return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: filePath, query: key });
  }
}

/** Open the diff editor for a permission request of Write/Edit. Returns false if not possible. */
export async function showProposedDiff(
  provider: ProposedContentProvider,
  toolName: string,
  input: Record<string, unknown>,
  workingDir: string,
): Promise<boolean> {
  const file = typeof input.file_path === "string" ? input.file_path : undefined;
  if (!file) return false;
  const absolute = resolveInWorkspace(file, workingDir);
  const proposed = proposedContent(toolName, input, absolute);
  if (!proposed) return false;
  const left =
    proposed.before === undefined ? provider.add(absolute, "") : vscode.Uri.file(absolute);
  const right = provider.add(absolute, proposed.after);
  const name = path.basename(absolute);
  const label = proposed.before === undefined ? `${name} (new file, proposed)` : `${name} ↔ proposed by Sema`;
  await vscode.commands.executeCommand("vscode.diff", left, right, label, { preview: true });
  return true;
}
