// The chat's commands that ask in the editor's own UI (quick pick, input box) before acting:
// "Rename Chat…", "Set Sandbox…", "Resume Session…".
import * as vscode from "vscode";
import type { ChatSession } from "./client";
import type { SandboxState, SessionListResult } from "./protocol";

/**
 * "Sema: Rename Chat…": the title `session/list` shows for this chat (`session/rename`); an
 * empty title gives it back the title of its first message. Resolves with the title the
 * server settled on, or `false` when nothing was renamed.
 */
export async function renameChat(
  session: ChatSession | undefined,
  current: string | undefined,
): Promise<string | undefined | false> {
  if (!session) {
    void vscode.window.showInformationMessage("Start a chat first: there is nothing to rename yet.");
    return false;
  }
  if (!session.connection.supports("session/rename")) {
    void vscode.window.showWarningMessage("This sema-rpc cannot rename sessions (it has no session/rename).");
    return false;
  }
  const title = await vscode.window.showInputBox({
    prompt: "Chat title (empty: the first message)",
    value: current ?? "",
  });
  if (title === undefined) return false;
  const result = await session.connection.request("session/rename", { sessionId: session.id, title });
  return result.title ?? undefined;
}

/** "Sema: Set Sandbox…": the OS sandbox the chat's commands run in (`session/setSandbox`). */
export async function pickSandbox(session: ChatSession | undefined): Promise<SandboxState | undefined> {
  if (!session?.sandbox || !session.connection.supports("session/setSandbox")) {
    void vscode.window.showInformationMessage("Start a chat first (with a sema-rpc that has a sandbox).");
    return undefined;
  }
  if (!session.sandbox.available) {
    void vscode.window.showWarningMessage(`No sandbox here: ${session.sandbox.reason ?? "unavailable"}`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    [
      { label: "workspace-write", detail: "Commands write only inside the workspace (not .git/), no network" },
      { label: "read-only", detail: "Commands cannot write (but a temp dir) or connect" },
      { label: "off", detail: "Commands run unconfined" },
    ] as const,
    { placeHolder: `Sandbox for this chat's commands (now: ${session.sandbox.mode})` },
  );
  if (!picked) return undefined;
  return session.setSandbox(picked.label);
}

/** "Sema: Resume Session…": one of the folder's saved sessions (undefined: none picked). */
export async function pickSavedSession(sessions: SessionListResult["sessions"]): Promise<string | undefined> {
  if (sessions.length === 0) {
    void vscode.window.showInformationMessage("No saved Sema sessions in this folder yet.");
    return undefined;
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
  return pick?.sessionId;
}
