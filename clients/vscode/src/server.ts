// The sema-rpc process of this window: found, spawned with the user's keys, restarted if it dies.
import { appendFileSync } from "node:fs";
import * as vscode from "vscode";
import { SemaConnection, SemaError } from "./client";
import { ServerInstaller } from "./serverInstall";
import { userSetting } from "./trust";

export { INSTALL_HINT, ServerMissingError } from "./util";

/** The keys "Sema: Set API Key" stores (SecretStorage) and passes to the server's environment. */
export const KEY_NAMES = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] as const;

export type ServerState = "stopped" | "starting" | "ready" | "restarting" | "missing" | "failed";

/** Restarts allowed within RESTART_WINDOW_MS before giving up (then: a "Restart" button). */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 60_000;

export class ServerManager implements vscode.Disposable {
  private connection: SemaConnection | undefined;
  private starting: Promise<SemaConnection> | undefined;
  private restarts: number[] = [];
  private disposed = false;
  state: ServerState = "stopped";
  readonly onDidChangeState = new vscode.EventEmitter<{ state: ServerState; message?: string }>();
  /** Fired with the new connection after an unexpected exit and a restart. */
  readonly onDidRestart = new vscode.EventEmitter<SemaConnection>();
  /** Milliseconds from activation to the first `initialize` answer (a figure for bench/). */
  initializeMs: number | undefined;
  /** Finds the server, and installs a private one when there is none. */
  readonly installer: ServerInstaller;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.OutputChannel,
    private readonly activatedAt: number,
  ) {
    this.installer = new ServerInstaller(context, output);
  }

  private setState(state: ServerState, message?: string): void {
    this.state = state;
    this.onDidChangeState.fire({ state, message });
  }

  /** The running connection, starting the server on first use. */
  get(): Promise<SemaConnection> {
    if (this.connection?.alive) return Promise.resolve(this.connection);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<SemaConnection> {
    let command: string;
    try {
      // Machine settings: the user's value only, never a folder's (see trust.ts).
      command = await this.installer.resolve(userSetting<string>("serverPath", ""));
    } catch (err) {
      this.setState("missing", (err as Error).message);
      throw err;
    }
    this.setState(this.restarts.length ? "restarting" : "starting");
    const env: NodeJS.ProcessEnv = { ...process.env };
    const values = await Promise.all(KEY_NAMES.map((name) => this.context.secrets.get(`sema.${name}`)));
    KEY_NAMES.forEach((name, i) => {
      if (values[i]) env[name] = values[i];
    });
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const args = userSetting<string[]>("serverArgs", []);
    this.output.appendLine(
      `[sema] starting ${command} ${args.join(" ")} (${Date.now() - this.activatedAt} ms after activation)`,
    );
    let conn: SemaConnection;
    try {
      conn = await SemaConnection.start({
        command,
        args,
        env,
        cwd,
        onStderr: (text) => this.output.append(text),
      });
      const init = await conn.initialize("sema-vscode", this.context.extension.packageJSON.version as string);
      if (this.initializeMs === undefined) {
        this.initializeMs = Date.now() - this.activatedAt;
        const benchFile = process.env.SEMA_VSCODE_BENCH_FILE;
        if (benchFile) {
          appendFileSync(benchFile, JSON.stringify({ figure: "activationToInitialize", ms: this.initializeMs }) + "\n");
        }
      }
      this.output.appendLine(
        `[sema] ${init.serverInfo.name} ${init.serverInfo.version} ready (pid ${conn.pid}; ` +
          `initialize answered ${Date.now() - this.activatedAt} ms after activation)`,
      );
    } catch (err) {
      const message = err instanceof SemaError ? err.message : String(err);
      this.setState("failed", message);
      this.output.appendLine(`[sema] failed to start: ${message}`);
      throw err;
    }
    conn.onExit((code, signal) => this.onExit(conn, code, signal));
    this.connection = conn;
    this.setState("ready");
    return conn;
  }

  private onExit(conn: SemaConnection, code: number | null, signal: string | null): void {
    if (this.connection !== conn) return;
    this.connection = undefined;
    if (this.disposed) return;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    this.output.appendLine(`[sema] server exited (${how})`);
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    if (this.restarts.length >= MAX_RESTARTS) {
      this.setState("failed", `The Sema server stopped (${how}) ${MAX_RESTARTS} times in a minute.`);
      void vscode.window
        .showErrorMessage(`The Sema server keeps stopping (${how}). See the log.`, "Restart", "Show Log")
        .then((pick) => {
          if (pick === "Restart") void this.restart();
          if (pick === "Show Log") this.output.show(true);
        });
      return;
    }
    this.restarts.push(now);
    void vscode.window.showWarningMessage(`The Sema server stopped (${how}); restarting it.`);
    this.get().then(
      (next) => this.onDidRestart.fire(next),
      () => undefined,
    );
  }

  /** Stop (shutdown + exit) and start again: after a key or setting change. */
  async restart(): Promise<SemaConnection> {
    const old = this.connection;
    this.connection = undefined;
    this.restarts = [];
    await old?.shutdown();
    const next = await this.get();
    this.onDidRestart.fire(next);
    return next;
  }

  async stop(): Promise<void> {
    this.disposed = true;
    const conn = this.connection;
    this.connection = undefined;
    await conn?.shutdown();
    this.setState("stopped");
  }

  dispose(): void {
    void this.stop();
    this.onDidChangeState.dispose();
    this.onDidRestart.dispose();
  }
}
