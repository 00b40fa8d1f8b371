// Helpers without `vscode`, so they are tested in plain Node.
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const INSTALL_HINT =
  "Run “Sema: Install Server” (a private environment for this extension), or install sema-rpc " +
  "yourself (`pipx install .` in a sema-rpc checkout) so that `sema-rpc` is on PATH, or set " +
  "`sema.serverPath` to the executable.";

export class ServerMissingError extends Error {}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** `sema.serverPath`, else `sema-rpc` on PATH; throws ServerMissingError with the install hint. */
export function findServer(configured: string, envPath = process.env.PATH ?? ""): string {
  if (configured.trim()) {
    const expanded = configured.trim().replace(/^~(?=$|\/)/, os.homedir());
    if (isExecutable(expanded)) return expanded;
    throw new ServerMissingError(`sema.serverPath points to ${expanded}, which is not an executable file. ${INSTALL_HINT}`);
  }
  const names = process.platform === "win32" ? ["sema-rpc.exe", "sema-rpc.cmd", "sema-rpc"] : ["sema-rpc"];
  for (const dir of envPath.split(path.delimiter)) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (dir && isExecutable(candidate)) return candidate;
    }
  }
  throw new ServerMissingError(`sema-rpc was not found on PATH. ${INSTALL_HINT}`);
}

/** A file's text, or undefined when it cannot be read. */
export function readText(file: string): string | undefined {
  return readOr(file, undefined);
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


/**
 * A file's content before a change, rebuilt from its content after the change and the
 * change's unified diff (hunks applied backwards). Undefined when the diff does not fit
 * (the file was edited again since): then only the patch itself can be shown.
 */
export function reversePatch(diff: string, after: string): string | undefined {
  const current = after === "" ? [] : after.split("\n");
  const afterEndsWithNewline = after.endsWith("\n");
  if (afterEndsWithNewline) current.pop();
  const before: string[] = [];
  let pos = 0;
  let beforeEndsWithNewline = true;
  let lastKind = "";
  const lines = diff.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      const start = Number(hunk[1]);
      const count = hunk[2] === undefined ? 1 : Number(hunk[2]);
      // A hunk that adds nothing names the line after which it applies.
      const index = count === 0 ? start : start - 1;
      if (index < pos || index > current.length) return undefined;
      before.push(...current.slice(pos, index));
      pos = index;
      continue;
    }
    if (line.startsWith("\\")) {
      if (lastKind === "-" || lastKind === " ") beforeEndsWithNewline = false;
      continue;
    }
    if (line.startsWith("---") || line.startsWith("+++") || !/^[ +-]/.test(line)) continue;
    const kind = line[0]!;
    const text = line.slice(1);
    lastKind = kind;
    if (kind === "-") {
      before.push(text);
    } else {
      if (current[pos] !== text) return undefined;
      if (kind === " ") before.push(text);
      pos++;
    }
  }
  before.push(...current.slice(pos));
  if (before.length === 0) return "";
  // Lines after the last hunk keep the file's own ending.
  const tailUnchanged = pos < current.length;
  const endsWithNewline = tailUnchanged ? afterEndsWithNewline : beforeEndsWithNewline;
  return before.join("\n") + (endsWithNewline ? "\n" : "");
}

/** What the status bar says about a session's OS sandbox (`session:ready`, `sandbox:update`). */
export function sandboxLabel(
  state: { mode: string; network?: boolean; available?: boolean; reason?: string | null } | null | undefined,
): { text: string; tooltip: string; warning: boolean } | undefined {
  if (!state) return undefined;
  if (state.available === false) {
    return {
      text: "$(warning) Sema: no sandbox",
      tooltip: `Commands run unconfined: ${state.reason ?? "this system has no sandbox"}`,
      warning: true,
    };
  }
  const net = state.network ? ", network allowed" : "";
  switch (state.mode) {
    case "workspace-write":
      return {
        text: "$(shield) Sema: workspace",
        tooltip: `Commands write only inside the workspace (not .git/), no network${net}. Click to change.`,
        warning: false,
      };
    case "read-only":
      return {
        text: "$(lock) Sema: read-only",
        tooltip: `Commands cannot write (but a temp dir) or connect${net}. Click to change.`,
        warning: false,
      };
    default:
      return {
        text: "$(unlock) Sema: sandbox off",
        tooltip: "Commands run unconfined (consent as without a sandbox). Click to change.",
        warning: true,
      };
  }
}
