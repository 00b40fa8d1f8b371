// "Sema: Attach to a Running Session…": a chat on a session another sema-rpc process hosts.
import * as vscode from "vscode";
import type { ChatViewProvider } from "./chatView";
import { allLiveSessions, connectTo, discoverServers, runDir, type LiveSession } from "./endpoints";

const CLIENT_NAME = "sema-vscode";

/** Pick a live session of a live server and open the chat on it. */
export async function attachToRunningSession(chat: ChatViewProvider, version?: string): Promise<void> {
  const servers = discoverServers();
  if (servers.length === 0) {
    void vscode.window.showInformationMessage(
      `No running Sema server to attach to (none listed in ${runDir()}). Start one with ` +
        "`sema-rpc serve`, `sema-rpc --listen unix`, or `sema-rpc run --listen unix …`.",
    );
    return;
  }
  const { sessions, problems } = await allLiveSessions(servers, CLIENT_NAME);
  for (const problem of problems) void vscode.window.showWarningMessage(`Sema: ${problem}`);
  if (sessions.length === 0) {
    void vscode.window.showInformationMessage("The running Sema servers have no live session.");
    return;
  }
  const pick = await vscode.window.showQuickPick(
    sessions.map((s) => ({
      label: s.title || s.sessionId,
      description: `${s.state ?? "live"} · pid ${s.server.pid}`,
      detail: s.workingDir ?? s.server.cwd ?? "",
      session: s,
    })),
    { placeHolder: "Attach to a running Sema session", matchOnDescription: true, matchOnDetail: true },
  );
  if (pick) await openAttached(chat, pick.session, version);
}

async function openAttached(chat: ChatViewProvider, live: LiveSession, version?: string): Promise<void> {
  const conn = await connectTo(live.server, CLIENT_NAME, version);
  try {
    const workingDir = live.workingDir ?? live.server.cwd ?? "";
    await vscode.commands.executeCommand("sema.chat.focus");
    const title = live.title ?? live.sessionId;
    const { session, attach } = await conn.attachSession(live.sessionId, workingDir, (s) =>
      chat.openAttached(s, title, live.server.pid),
    );
    chat.attachedNow(session, attach);
  } catch (err) {
    await conn.shutdown();
    throw err;
  }
}
