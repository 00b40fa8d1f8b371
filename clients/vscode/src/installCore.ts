// The private server install without `vscode` (tested in plain Node): finding a Python ≥ 3.11
// (or uv), comparing versions, the install's state file, the lock two windows share, and the
// install itself (a fresh virtualenv per install, made current by an atomic rename of the
// state file: a venv cannot be moved, so the directory is never renamed).
import { spawn } from "node:child_process";
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const MIN_PYTHON: readonly [number, number] = [3, 11];
const STATE_FILE = "server.json";
const LOCK_DIR = "install.lock";
const WIN = process.platform === "win32";

export interface PythonInfo {
  /** What was run (`python3`, an interpreter path). */
  command: string;
  /** The interpreter's own `sys.executable`. */
  executable: string;
  version: [number, number, number];
  /** Where it came from: "Python extension", "PATH". */
  source: string;
}

export interface PythonSearch {
  found: PythonInfo | undefined;
  /** Every interpreter looked at, suitable or not (for the "no suitable Python" message). */
  seen: PythonInfo[];
  /** `uv` on PATH: it can make the environment when no suitable Python was seen. */
  uv: string | undefined;
}

export interface InstallState {
  /** The venv directory's name under the storage directory. */
  venv: string;
  version: string;
  python: string;
  installedAt: string;
}

/** An executable file named `name` in one of PATH's directories. */
export function findOnPath(name: string, envPath = process.env.PATH ?? ""): string | undefined {
  const names = WIN ? [`${name}.exe`, `${name}.cmd`, name] : [name];
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue;
    for (const n of names) {
      const candidate = path.join(dir, n);
      try {
        accessSync(candidate, constants.X_OK);
        if (statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The names tried on PATH, newest first so that a `python3` older than 3.11 is not the end. */
export function pythonNames(): string[] {
  return WIN ? ["python", "python3", "py"] : ["python3", "python3.14", "python3.13", "python3.12", "python3.11", "python"];
}

/** "3.12.1" style version tuple comparison against MIN_PYTHON. */
export function isSuitable(version: readonly number[], minimum: readonly number[] = MIN_PYTHON): boolean {
  for (let i = 0; i < minimum.length; i++) {
    const v = version[i] ?? 0;
    if (v !== minimum[i]) return v > minimum[i]!;
  }
  return true;
}

const PROBE = "import sys; print(sys.version_info[0], sys.version_info[1], sys.version_info[2], sys.executable)";

/**
 * Run `command -I -c PROBE` (isolated: neither the working folder nor PYTHON* variables reach
 * its imports); undefined when it is no Python or does not run.
 */
export function probePython(command: string, source: string): Promise<PythonInfo | undefined> {
  return new Promise((resolve) => {
    const child = spawn(command, ["-I", "-c", PROBE], { stdio: ["ignore", "pipe", "ignore"], timeout: 15000, cwd: os.tmpdir() });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", () => resolve(undefined));
    child.on("close", (code) => {
      const m = /^(\d+) (\d+) (\d+) (.+)$/m.exec(out.trim());
      if (code !== 0 || !m) return resolve(undefined);
      resolve({ command, executable: m[4]!.trim(), version: [Number(m[1]), Number(m[2]), Number(m[3])], source });
    });
  });
}

/**
 * The first suitable Python: the given interpreters first (the Python extension's selected
 * one), then PATH's. Interpreters seen twice (a symlink and its target) are listed once.
 */
export async function findPython(preferred: { command: string; source: string }[], envPath = process.env.PATH ?? ""): Promise<PythonSearch> {
  const seen: PythonInfo[] = [];
  const executables = new Set<string>();
  const candidates = [...preferred];
  for (const name of pythonNames()) {
    const exe = findOnPath(name, envPath);
    if (exe) candidates.push({ command: exe, source: "PATH" });
  }
  let found: PythonInfo | undefined;
  for (const c of candidates) {
    const info = await probePython(c.command, c.source);
    if (!info || executables.has(info.executable)) continue;
    executables.add(info.executable);
    seen.push(info);
    if (!found && isSuitable(info.version)) found = info;
    if (found) break;
  }
  return { found, seen, uv: findOnPath("uv", envPath) };
}

/** What the "no suitable Python" message lists: `/usr/bin/python3 (3.9.2)`. */
export function describeSeen(seen: PythonInfo[]): string {
  if (seen.length === 0) return "no Python was found";
  return "found " + seen.map((p) => `${p.executable} (${p.version.join(".")}, ${p.source})`).join(", ");
}

/** The version in a wheel's file name (`sema_rpc-0.2.0-py3-none-any.whl` → `0.2.0`). */
export function wheelVersion(fileName: string): string | undefined {
  return /^sema_rpc-([^-]+)-[^-]+-[^-]+-[^-]+\.whl$/.exec(path.basename(fileName))?.[1];
}

/** The wheel shipped in the extension's `server/` folder, if any. */
export function bundledWheel(dir: string): { file: string; version: string } | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names.sort().reverse()) {
    const version = wheelVersion(name);
    if (version) return { file: path.join(dir, name), version };
  }
  return undefined;
}

function versionKey(v: string): number[] {
  // PEP 440's common forms: 1.2.3, 1.2.3a1 / b / rc, .postN, .devN (a local `+…` is ignored).
  const m = /^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?(?:[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?/i.exec(
    v.trim(),
  );
  if (!m) return [];
  const release = m[1]!.split(".").map(Number);
  while (release.length < 4) release.push(0);
  const pre = m[2]?.toLowerCase();
  const preRank = pre === undefined ? 3 : pre.startsWith("a") ? 0 : pre.startsWith("b") ? 1 : 2;
  const dev = m[5] !== undefined;
  // A bare .devN sorts before the release's pre-releases.
  const rank = dev && pre === undefined && m[4] === undefined ? -1 : preRank;
  return [...release.slice(0, 4), rank, Number(m[3] || 0), m[4] !== undefined ? Number(m[4] || 0) : -1, dev ? Number(m[5] || 0) : Infinity];
}

/** -1, 0 or 1, as `a` is older than, equal to or newer than `b`. */
export function compareVersions(a: string, b: string): number {
  const ka = versionKey(a);
  const kb = versionKey(b);
  for (let i = 0; i < Math.max(ka.length, kb.length); i++) {
    const x = ka[i] ?? 0;
    const y = kb[i] ?? 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export function venvServer(venvDir: string): string {
  return WIN ? path.join(venvDir, "Scripts", "sema-rpc.exe") : path.join(venvDir, "bin", "sema-rpc");
}

function venvPython(venvDir: string): string {
  return WIN ? path.join(venvDir, "Scripts", "python.exe") : path.join(venvDir, "bin", "python");
}

export function readState(storageDir: string): InstallState | undefined {
  try {
    const state = JSON.parse(readFileSync(path.join(storageDir, STATE_FILE), "utf8")) as InstallState;
    return typeof state.venv === "string" && typeof state.version === "string" ? state : undefined;
  } catch {
    return undefined;
  }
}

/** The installed server's executable, when the state file names a venv that has one. */
export function installedServer(storageDir: string): { command: string; state: InstallState } | undefined {
  const state = readState(storageDir);
  if (!state) return undefined;
  const command = venvServer(path.join(storageDir, state.venv));
  try {
    accessSync(command, constants.X_OK);
    return { command, state };
  } catch {
    return undefined;
  }
}

/** Written beside, then renamed over: a reader sees the old state or the new, never half. */
export function writeState(storageDir: string, state: InstallState): void {
  const tmp = path.join(storageDir, `${STATE_FILE}.${process.pid}.tmp`);
  writeFileSync(tmp, JSON.stringify(state, null, 2) + "\n");
  renameSync(tmp, path.join(storageDir, STATE_FILE));
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Run `fn` holding the storage directory's install lock (a directory: `mkdir` is atomic). A
 * lock whose owner process is gone, or older than `staleMs`, is taken over.
 */
export async function withInstallLock<T>(
  storageDir: string,
  fn: () => Promise<T>,
  opts: { staleMs?: number; pollMs?: number; onWait?: () => void } = {},
): Promise<T> {
  const lock = path.join(storageDir, LOCK_DIR);
  const staleMs = opts.staleMs ?? 15 * 60_000;
  mkdirSync(storageDir, { recursive: true });
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(path.join(lock, "owner"), `${process.pid}\n`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      let stale = false;
      try {
        const owner = Number(readFileSync(path.join(lock, "owner"), "utf8").trim());
        stale = (owner > 0 && !pidAlive(owner)) || Date.now() - statSync(lock).mtimeMs > staleMs;
      } catch {
        // the owner file is not written yet (or the lock was just released): look again
        try {
          stale = Date.now() - statSync(lock).mtimeMs > staleMs;
        } catch {
          stale = false;
        }
      }
      if (stale) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!told) opts.onWait?.();
      told = true;
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export interface InstallOptions {
  storageDir: string;
  wheel: { file: string; version: string };
  python: PythonSearch;
  log: (text: string) => void;
  step: (message: string) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
}

/**
 * Run a command in the storage folder (never the workspace's: `python -m venv` would import a
 * workspace's venv.py), its output to `log`; rejects with the output's tail when it fails.
 */
function run(command: string, args: string[], opts: InstallOptions): Promise<string> {
  opts.log(`$ ${command} ${args.join(" ")}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: opts.env ?? process.env,
      signal: opts.signal,
      cwd: opts.storageDir,
    });
    let out = "";
    const take = (d: Buffer) => {
      const text = d.toString();
      out += text;
      opts.log(text);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", (err) => reject(err));
    child.on("close", (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${path.basename(command)} ${args[0] ?? ""} failed (exit ${code}): ${out.trim().split("\n").slice(-6).join("\n")}`));
    });
  });
}

/**
 * Install the wheel into a new virtualenv under `storageDir` and make it current. Idempotent:
 * when the current install already has the wheel's version (another window just made it),
 * nothing is done. The previous venv is kept (a window may still run its server); older ones
 * are removed.
 */
export async function installServer(opts: InstallOptions): Promise<{ command: string; state: InstallState; installed: boolean }> {
  const { storageDir, wheel, python } = opts;
  if (!python.found && !python.uv) {
    throw new Error(`Sema's server needs Python ${MIN_PYTHON.join(".")} or newer (or uv): ${describeSeen(python.seen)}.`);
  }
  return withInstallLock(
    storageDir,
    async () => {
      const current = installedServer(storageDir);
      if (current && compareVersions(current.state.version, wheel.version) === 0) {
        return { ...current, installed: false };
      }
      const name = `venv-${wheel.version}-${Date.now().toString(36)}`;
      const venv = path.join(storageDir, name);
      try {
        const found = python.found;
        if (python.uv) {
          opts.step("Creating a Python environment (uv)");
          const which = found ? found.executable : `>=${MIN_PYTHON.join(".")}`;
          await run(python.uv, ["venv", "--python", which, venv], opts);
          opts.step(`Installing sema-rpc ${wheel.version} and its dependencies`);
          await run(python.uv, ["pip", "install", "--python", venvPython(venv), wheel.file], opts);
        } else if (found) {
          opts.step(`Creating a Python ${found.version.slice(0, 2).join(".")} environment`);
          await run(found.executable, ["-m", "venv", venv], opts);
          opts.step(`Installing sema-rpc ${wheel.version} and its dependencies`);
          await run(venvPython(venv), ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", wheel.file], opts);
        }
        opts.step("Checking the server");
        const printed = await run(venvServer(venv), ["--version"], opts);
        if (!printed.includes(wheel.version)) throw new Error(`the installed server says ${printed.trim()}, not ${wheel.version}`);
        const interpreter = (await probePython(venvPython(venv), "venv"))?.version.join(".") ?? "?";
        const state: InstallState = { venv: name, version: wheel.version, python: interpreter, installedAt: new Date().toISOString() };
        writeState(storageDir, state);
        for (const old of readdirSync(storageDir)) {
          if (old.startsWith("venv-") && old !== name && old !== current?.state.venv) {
            rmSync(path.join(storageDir, old), { recursive: true, force: true });
          }
        }
        return { command: venvServer(venv), state, installed: true };
      } catch (err) {
        rmSync(venv, { recursive: true, force: true });
        throw err;
      }
    },
    { onWait: () => opts.step("Waiting for another window's install") },
  );
}
