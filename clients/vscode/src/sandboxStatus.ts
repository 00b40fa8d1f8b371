// The status-bar item that says which OS sandbox the chat's commands run in.
import * as vscode from "vscode";
import type { SandboxState } from "./protocol";
import { sandboxLabel } from "./util";

export class SandboxStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("sema.sandbox", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "Sema sandbox";
    this.item.command = "sema.setSandbox";
  }

  /** Shows the session's sandbox; hidden while no chat session is open. */
  show(state: SandboxState | null | undefined): void {
    const label = sandboxLabel(state);
    if (!label) {
      this.item.hide();
      return;
    }
    this.item.text = label.text;
    this.item.tooltip = label.tooltip;
    this.item.backgroundColor =
      label.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
