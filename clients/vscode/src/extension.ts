// Entry point: one sema-rpc server per window, the chat view, the commands.
import * as vscode from "vscode";
import { attachToRunningSession } from "./attach";
import { ChatViewProvider } from "./chatView";
import { PROPOSED_SCHEME, ProposedContentProvider } from "./diff";
import { KEY_NAMES, ServerManager } from "./server";

let server: ServerManager | undefined;
let chat: ChatViewProvider | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const activatedAt = Date.now();
  const output = vscode.window.createOutputChannel("Sema");
  server = new ServerManager(context, output, activatedAt);
  const proposed = new ProposedContentProvider();
  chat = new ChatViewProvider(context, server, proposed);
  const srv = server;
  const view = chat;

  context.subscriptions.push(
    output,
    srv,
    view,
    vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, proposed),
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand("sema.openChat", async () => {
      await vscode.commands.executeCommand("sema.chat.focus");
    }),
    vscode.commands.registerCommand("sema.newChat", async () => {
      await vscode.commands.executeCommand("sema.chat.focus");
      await view.newChat();
    }),
    vscode.commands.registerCommand("sema.renameChat", async () => {
      await vscode.commands.executeCommand("sema.chat.focus");
      await view.renameChat();
    }),
    vscode.commands.registerCommand("sema.setSandbox", async () => {
      await view.setSandbox();
    }),
    vscode.commands.registerCommand("sema.resumeSession", async () => {
      await vscode.commands.executeCommand("sema.chat.focus");
      await view.pickSession();
    }),
    vscode.commands.registerCommand("sema.attachSession", async () => {
      try {
        await attachToRunningSession(view, context.extension.packageJSON.version as string);
      } catch (err) {
        void vscode.window.showErrorMessage(`Sema: could not attach: ${(err as Error).message}`);
      }
    }),
    vscode.commands.registerCommand("sema.setApiKey", async () => {
      const name = await vscode.window.showQuickPick([...KEY_NAMES], { placeHolder: "Which key?" });
      if (!name) return;
      const value = await vscode.window.showInputBox({
        prompt: `${name} (stored in VS Code's secret storage, passed to sema-rpc's environment)`,
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return;
      if (value) await context.secrets.store(`sema.${name}`, value);
      else await context.secrets.delete(`sema.${name}`);
      void vscode.window.showInformationMessage(`${name} ${value ? "saved" : "removed"}; restarting the Sema server.`);
      await srv.restart().catch(() => undefined);
    }),
    vscode.commands.registerCommand("sema.restartServer", () => srv.restart()),
    vscode.commands.registerCommand("sema.showLog", () => output.show(true)),
    vscode.commands.registerCommand("sema.installServer", async () => {
      if (await srv.installer.installInteractive()) await srv.restart().catch(() => undefined);
    }),
    // No server anywhere: offer to install the one this .vsix ships.
    srv.onDidChangeState.event(({ state }) => {
      if (state === "missing") srv.installer.offer(() => void srv.restart().catch(() => undefined));
    }),
  );
  // Activation means the chat is being opened (its view or a command): start the server now.
  srv.get().catch(() => undefined);
}

export async function deactivate(): Promise<void> {
  await chat?.shutdown().catch(() => undefined);
  await server?.stop();
}
