// "Show diff" for a proposed Write/Edit: VS Code's diff editor, current file vs. proposed content.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

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

function readOr(file: string, fallback: string | undefined): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return fallback;
  }
}

/**
 * The content a Write or Edit call would leave in the file, or undefined if it cannot be
 * computed (an Edit whose old text is not in the file: the server will refuse it anyway).
 */
export function proposedContent(
  toolName: string,
  input: Record<string, unknown>,
  absolutePath: string,
): { before: string | undefined; after: string } | undefined {
  const before = readOr(absolutePath, undefined);
  if (toolName === "Write" && typeof input.content === "string") {
    return { before, after: input.content };
  }
  if (toolName === "Edit" && typeof input.new_string === "string") {
    const oldText = typeof input.old_string === "string" ? input.old_string : "";
    if (oldText === "") return { before, after: input.new_string };
    if (before === undefined || !before.includes(oldText)) return undefined;
    const after = input.replace_all
      ? before.split(oldText).join(input.new_string)
      : before.replace(oldText, () => input.new_string as string);
    return { before, after };
  }
  return undefined;
}

export function resolveInWorkspace(file: string, workingDir: string): string {
  return path.isAbsolute(file) ? file : path.join(workingDir, file);
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
