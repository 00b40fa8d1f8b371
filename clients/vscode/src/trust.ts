// Workspace Trust: what a folder's own settings may decide.
//
// A folder is written by strangers. `sema.serverPath` and `sema.serverArgs` choose the program
// the extension runs: they are machine-scoped and read from the user's settings only, trusted
// folder or not. `sema.permissionMode` of a folder the user has not trusted (Restricted Mode)
// is ignored: the user's own value applies, and the chat says so.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PermissionMode } from "./messages";

/** A machine setting as VS Code resolves it (user, or remote settings in a remote window),
 *  and never a folder's value, whatever VS Code's version does with the scope. */
export function userSetting<T>(key: string, fallback: T): T {
  const config = vscode.workspace.getConfiguration("sema");
  const value = config.get<T>(key, fallback);
  const info = config.inspect<T>(key);
  const folder = info?.workspaceFolderValue ?? info?.workspaceValue;
  if (folder !== undefined && JSON.stringify(folder) === JSON.stringify(value)) {
    return info?.globalValue ?? info?.defaultValue ?? fallback;
  }
  return value;
}

/** The permission mode for new chats, and the folder's value when Restricted Mode ignored it. */
export function permissionModeSetting(): { mode: PermissionMode; ignored?: PermissionMode } {
  if (vscode.workspace.isTrusted) {
    return { mode: vscode.workspace.getConfiguration("sema").get<PermissionMode>("permissionMode", "default") };
  }
  const info = vscode.workspace.getConfiguration("sema").inspect<PermissionMode>("permissionMode");
  const mode = userSetting<PermissionMode>("permissionMode", "default");
  const folder = info?.workspaceFolderValue ?? info?.workspaceValue ?? folderSetting("permissionMode");
  return { mode, ignored: folder !== undefined && folder !== mode ? folder : undefined };
}

/** The folder's own value of a string setting, read as text from .vscode/settings.json:
 *  in Restricted Mode VS Code may not report a restricted setting's folder value at all. */
function folderSetting<T extends string>(key: string): T | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!folder) return undefined;
  try {
    const text = readFileSync(path.join(folder, ".vscode", "settings.json"), "utf8");
    const match = new RegExp(`"sema\\.${key}"\\s*:\\s*"([^"]*)"`).exec(text);
    return match ? (match[1] as T) : undefined;
  } catch {
    return undefined;
  }
}

export function ignoredNotice(ignored: PermissionMode, mode: PermissionMode): string {
  return (
    `This folder is not trusted (Restricted Mode): its setting sema.permissionMode "${ignored}" is ignored; ` +
    `new chats use "${mode}". Trust the folder to use its settings.`
  );
}
