// Live sema-rpc servers of this user and their live sessions, for "Attach to a Running
// Session…". Nothing here imports `vscode`, so it runs (and is tested) in plain Node.
//
// A server started with `--listen` (or `sema-rpc serve`, or `sema-rpc run --listen`) writes
// `$SEMA_ROOT/run/<pid>.json` (0600): its endpoint, the token file of a TCP listener, its
// working directory; the file goes at exit. A file whose process is gone is skipped.
import { readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";
import { SemaConnection, SemaError } from "./client";

export interface LiveServer {
  pid: number;
  endpoint: string;
  tokenFile?: string;
  cwd?: string;
  startedAt?: string;
}

/** A `session/list` entry marked `live`, and the server that holds it. */
export interface LiveSession {
  server: LiveServer;
  sessionId: string;
  title?: string | null;
  workingDir?: string | null;
  state?: string;
  updatedAt?: string;
}

/** `$SEMA_ROOT/run`, else `~/.sema/run`. */
export function runDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.SEMA_ROOT ? env.SEMA_ROOT.replace(/^~(?=$|\/)/, homedir()) : path.join(homedir(), ".sema");
  return path.join(root, "run");
}

/** Whether a process with this pid exists (one of another user's counts). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The live servers described in `dir`, newest first; dead ones and unreadable files skipped. */
export function discoverServers(dir: string = runDir()): LiveServer[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const servers: LiveServer[] = [];
  for (const name of names) {
    let info: unknown;
    try {
      info = JSON.parse(readFileSync(path.join(dir, name), "utf8"));
    } catch {
      continue;
    }
    if (typeof info !== "object" || info === null) continue;
    const { pid, endpoint, tokenFile, cwd, startedAt } = info as Record<string, unknown>;
    if (typeof pid !== "number" || typeof endpoint !== "string" || !pidAlive(pid)) continue;
    servers.push({
      pid,
      endpoint,
      ...(typeof tokenFile === "string" ? { tokenFile } : {}),
      ...(typeof cwd === "string" ? { cwd } : {}),
      ...(typeof startedAt === "string" ? { startedAt } : {}),
    });
  }
  return servers.sort((a, b) => (b.startedAt ?? "").localeCompare(a.startedAt ?? ""));
}

/** A connection to `server`, initialized (with its token when it listens on TCP). */
export async function connectTo(server: LiveServer, clientName: string, version?: string): Promise<SemaConnection> {
  let token: string | undefined;
  if (server.endpoint.startsWith("tcp:")) {
    if (!server.tokenFile) throw new SemaError(`${server.endpoint} names no token file`);
    try {
      token = readFileSync(server.tokenFile, "utf8").trim();
    } catch (err) {
      throw new SemaError(`cannot read the token of ${server.endpoint}: ${(err as Error).message}`);
    }
  }
  const conn = await SemaConnection.connect(server.endpoint, token);
  try {
    await conn.initialize(clientName, version);
  } catch (err) {
    await conn.shutdown();
    throw err;
  }
  return conn;
}

/** The live sessions of `server` (its `session/list` entries marked `live`). */
export async function liveSessionsOf(server: LiveServer, clientName: string): Promise<LiveSession[]> {
  const conn = await connectTo(server, clientName);
  try {
    const { sessions } = await conn.request("session/list", {});
    return sessions
      .filter((s) => s.live === true)
      .map((s) => ({
        server,
        sessionId: s.sessionId,
        title: s.title ?? null,
        workingDir: s.workingDir ?? null,
        ...(s.state ? { state: s.state } : {}),
        updatedAt: s.updatedAt,
      }));
  } finally {
    await conn.shutdown();
  }
}

/** Every live session of every live server, and one line per server that could not be asked. */
export async function allLiveSessions(
  servers: LiveServer[],
  clientName: string,
): Promise<{ sessions: LiveSession[]; problems: string[] }> {
  const results = await Promise.allSettled(servers.map((s) => liveSessionsOf(s, clientName)));
  const sessions: LiveSession[] = [];
  const problems: string[] = [];
  results.forEach((r, i) => {
    if (r.status === "fulfilled") sessions.push(...r.value);
    else problems.push(`${servers[i].endpoint} (pid ${servers[i].pid}): ${(r.reason as Error).message}`);
  });
  return { sessions, problems };
}
