// Test support: the real sema-rpc of this repository and the scripted model server,
// with HOME and SEMA_ROOT in a temporary folder.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";

/** The repository root (this file is bundled into clients/vscode/out/test/). */
export const REPO = process.env.SEMA_REPO ?? path.resolve(__dirname, "../../../..");
export const PYTHON = process.env.SEMA_PYTHON ?? path.join(REPO, ".venv/bin/python");
export const SEMA_RPC = process.env.SEMA_RPC ?? path.join(REPO, ".venv/bin/sema-rpc");
export const MODEL = "anthropic/claude-test";

export interface ReplySpec {
  text?: string;
  chunks?: number;
  deltas?: number;
  thinking?: string;
  tools?: Array<[string, Record<string, unknown>] | [string, Record<string, unknown>, string]>;
  usage?: [number, number];
  delay_s?: number;
  gate?: string;
  error?: number;
  message?: string;
}

/** tests/support/scripted_llm.py, run by a small Python launcher and driven over its stdio. */
export class ScriptedModel {
  private answers: Array<(line: string) => void> = [];
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly url: string,
    readonly openaiUrl: string,
  ) {
    createInterface({ input: child.stdout }).on("line", (line) => this.answers.shift()?.(line));
  }

  static async start(): Promise<ScriptedModel> {
    const launcher = path.join(REPO, "clients/vscode/test/support/scripted_llm_server.py");
    const child = spawn(PYTHON, [launcher], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const first = await new Promise<string>((resolve, reject) => {
      const rl = createInterface({ input: child.stdout });
      rl.once("line", (line) => {
        rl.close();
        resolve(line);
      });
      child.once("exit", (code) => reject(new Error(`scripted model server exited ${code}: ${stderr}`)));
    });
    const { url, openaiUrl } = JSON.parse(first) as { url: string; openaiUrl: string };
    return new ScriptedModel(child, url, openaiUrl);
  }

  private command(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.answers.push((line) => resolve(JSON.parse(line) as Record<string, unknown>));
      this.child.stdin.write(JSON.stringify(cmd) + "\n");
    });
  }

  script(...replies: ReplySpec[]): Promise<Record<string, unknown>> {
    return this.command({ cmd: "script", replies });
  }

  async requestCount(): Promise<number> {
    return (await this.command({ cmd: "requests" })).count as number;
  }

  /** The HTTP path of each request so far (which provider API was called). */
  async requestPaths(): Promise<string[]> {
    return (await this.command({ cmd: "requests" })).paths as string[];
  }

  async requestBodies(): Promise<Array<Record<string, unknown>>> {
    return (await this.command({ cmd: "requests", bodies: true })).bodies as Array<Record<string, unknown>>;
  }

  open(gate: string): Promise<Record<string, unknown>> {
    return this.command({ cmd: "open", gate });
  }

  reset(): Promise<Record<string, unknown>> {
    return this.command({ cmd: "reset" });
  }

  async stop(): Promise<void> {
    this.child.stdin.end();
    await new Promise((resolve) => {
      if (this.child.exitCode !== null) resolve(undefined);
      else this.child.once("exit", resolve);
    });
  }
}

/** A temporary HOME, SEMA_ROOT and workspace, and the server's environment for them. */
export class TempHome {
  readonly root = mkdtempSync(path.join(tmpdir(), "sema-vscode-test-"));
  readonly home = path.join(this.root, "home");
  readonly semaRoot = path.join(this.root, "sema-root");
  readonly workspace = path.join(this.root, "workspace");

  constructor() {
    for (const dir of [this.home, this.semaRoot, this.workspace]) mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(this.workspace, "README.md"), "# Demo\n\nA tiny project.\n");
  }

  env(model: ScriptedModel): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: this.home,
      XDG_CONFIG_HOME: path.join(this.home, ".config"),
      XDG_CACHE_HOME: path.join(this.home, ".cache"),
      SEMA_ROOT: this.semaRoot,
      ANTHROPIC_API_KEY: "sk-ant-test-key-000000",
      ANTHROPIC_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-openai-000000",
      OPENAI_BASE_URL: model.openaiUrl,
      SEMA_MAX_RETRIES: "0",
      SEMA_LOG_LEVEL: "WARNING",
      SEMA_TIKTOKEN: "off",
    };
  }

  /** Write `$SEMA_ROOT/models.json` (model profiles the server lists and switches between). */
  writeModels(config: Record<string, unknown>): void {
    writeFileSync(path.join(this.semaRoot, "models.json"), JSON.stringify(config, null, 2));
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Resolve when `predicate` holds, polling every 10 ms; reject after `ms`. */
export async function waitFor(predicate: () => boolean, ms = 10000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
