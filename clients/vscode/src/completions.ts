// The composer's completions: `@` the workspace's files, `/` the built-in and custom commands.
import * as path from "node:path";
import type { Completion } from "./messages";
import type { CommandListResult } from "./protocol";

export const BUILTIN_COMMANDS: Completion[] = [
  { label: "/clear", detail: "Start over with an empty context", insert: "/clear" },
  { label: "/compact", detail: "Summarise the conversation now", insert: "/compact " },
];

/** Folders never offered after `@` (dependencies, VCS, build output). */
export const EXCLUDED_FOLDERS = "**/{node_modules,.git,.venv,out,dist}/**";
/** How many files the workspace search returns, and how many of them are offered. */
const SEARCHED = 50;
const OFFERED = 30;

/** What the completions need of the editor and of the server. */
export interface CompletionSources {
  /** The workspace's folder: file completions are relative to it. */
  base: string;
  /** Absolute paths of the files matching a glob (the editor's workspace search). */
  findFiles(include: string, exclude: string, max: number): Promise<string[]>;
  /** The project's custom commands (`command/list`); undefined when there is no server. */
  listCommands(): Promise<CommandListResult["commands"] | undefined>;
}

/** The glob for the files whose path contains `query` (glob characters in it dropped). */
export function fileGlob(query: string): string {
  return query ? `**/*${query.replace(/[[\]{}*?]/g, "")}*` : "**/*";
}

/** Files as `@` completions: shortest paths first; a path with spaces is inserted quoted. */
export function fileItems(files: string[], base: string): Completion[] {
  return files
    .map((f) => path.relative(base, f))
    .sort((a, b) => a.length - b.length || a.localeCompare(b))
    .slice(0, OFFERED)
    .map((rel) => ({ label: rel, insert: /\s/.test(rel) ? `@"${rel}" ` : `@${rel} ` }));
}

/** The built-in commands, then the project's, whose names start with `query`. */
export function commandItems(commands: CommandListResult["commands"], query: string): Completion[] {
  const custom = commands.map((c) => ({
    label: `/${c.name}`,
    detail: [c.argumentHint, c.description].filter(Boolean).join(" — "),
    insert: `/${c.name} `,
  }));
  return [...BUILTIN_COMMANDS, ...custom].filter((c) => c.label.slice(1).startsWith(query));
}

export async function completions(
  kind: "file" | "command",
  query: string,
  sources: CompletionSources,
): Promise<Completion[]> {
  if (kind === "file") {
    return fileItems(await sources.findFiles(fileGlob(query), EXCLUDED_FOLDERS, SEARCHED), sources.base);
  }
  let commands: CommandListResult["commands"] = [];
  try {
    commands = (await sources.listCommands()) ?? [];
  } catch {
    // Completion is a convenience: no server, no custom commands.
  }
  return commandItems(commands, query);
}
