// The conversation as the server keeps it (`session/messages`), and going back in it:
// `session/rewind` (and its redo). Files changed since the agent wrote them are a conflict:
// the chat asks inline, and only "Overwrite" repeats the call with `force`.
import type { ChatSession } from "./client";
import type { RestoreWhat, ToWebview } from "./messages";

/** Where the results go: the webview, and the chat's state bar. */
export interface ChatOutput {
  post(msg: ToWebview): void;
  postState(): void;
}

/** Draw the session's conversation (when its server can read it back). */
export async function showConversation(session: ChatSession, out: ChatOutput): Promise<void> {
  if (!session.connection.supports("session/messages")) return;
  out.post({ type: "messages", messages: await session.messages() });
}

/** Back to just before one of the user's messages: the files, the conversation or both. */
export async function rewind(
  session: ChatSession | undefined,
  messageId: string,
  restore: RestoreWhat,
  force: boolean,
  out: ChatOutput,
): Promise<void> {
  if (!session || !session.connection.supports("session/rewind")) return;
  const result = await session.rewind(messageId, restore, force);
  if (!result.rewound) {
    const conflicts = result.conflicts ?? [];
    if (conflicts.length) {
      out.post({ type: "rewindConflicts", messageId, restore, conflicts });
    } else {
      out.post({ type: "notice", message: "Nothing to rewind: the files and the conversation are as they were." });
    }
    return;
  }
  if (restore !== "code") {
    out.post({ type: "reset" });
    await showConversation(session, out);
    // The message goes back into the input, to be edited and sent again.
    if (result.input) out.post({ type: "restoreInput", text: result.input, images: [] });
  }
  out.post({ type: "rewound", messageId, restore, restoredFiles: result.restoredFiles ?? [] });
  out.postState();
}

/** Put back what the last rewind changed (conflicts ask first). */
export async function redo(session: ChatSession | undefined, force: boolean, out: ChatOutput): Promise<void> {
  if (!session || !session.connection.supports("session/rewind")) return;
  const result = await session.redo(force);
  if (!result.rewound) {
    const conflicts = result.conflicts ?? [];
    if (conflicts.length) out.post({ type: "rewindConflicts", restore: result.restore ?? "both", conflicts });
    return;
  }
  out.post({ type: "reset" });
  await showConversation(session, out);
  out.post({ type: "redone", restoredFiles: result.restoredFiles ?? [] });
  out.postState();
}
