// The server this extension installs for itself: the sema-rpc wheel shipped in the .vsix
// (`server/`), installed into a private virtualenv under the extension's global storage, with
// the Python the user already has (the Python extension's interpreter, else PATH's, or uv).
import * as path from "node:path";
import * as vscode from "vscode";
import {
  bundledWheel,
  compareVersions,
  describeSeen,
  findPython,
  installedServer,
  installServer,
  MIN_PYTHON,
  type PythonSearch,
} from "./installCore";
import { findServer, ServerMissingError } from "./util";

/** The Python extension's API, the part used here (`@vscode/python-extension`'s shape). */
interface PythonExtensionApi {
  ready?: Promise<void>;
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: { getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined } };
}

export class ServerInstaller {
  private installing: Promise<string> | undefined;
  private offered = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {}

  private get storageDir(): string {
    return path.join(this.context.globalStorageUri.fsPath, "server");
  }

  private get wheel(): { file: string; version: string } | undefined {
    return bundledWheel(path.join(this.context.extensionUri.fsPath, "server"));
  }

  /**
   * The server to run: `sema.serverPath`, else `sema-rpc` on PATH, else the private install
   * (upgraded first when this .vsix ships another version). Throws ServerMissingError.
   */
  async resolve(configured: string): Promise<string> {
    try {
      return findServer(configured);
    } catch (err) {
      if (configured.trim() || !(err instanceof ServerMissingError)) throw err;
      const current = installedServer(this.storageDir);
      const wheel = this.wheel;
      if (current && wheel && compareVersions(current.state.version, wheel.version) !== 0) {
        this.output.appendLine(`[sema] upgrading the private server ${current.state.version} → ${wheel.version}`);
        try {
          return await this.install();
        } catch (upgradeErr) {
          this.output.appendLine(`[sema] upgrade failed, keeping ${current.state.version}: ${(upgradeErr as Error).message}`);
          return current.command;
        }
      }
      if (current) return current.command;
      if (!wheel) throw err;
      throw new ServerMissingError(
        "sema-rpc was not found (no sema.serverPath, not on PATH). Run “Sema: Install Server” to install it " +
          "into a private environment, or set sema.serverPath.",
      );
    }
  }

  /** Offer the install once per window (from the "missing" state; not for a wrong sema.serverPath). */
  offer(onInstalled: () => void): void {
    if (this.offered || this.installing || !this.wheel) return;
    if (vscode.workspace.getConfiguration("sema").get<string>("serverPath", "").trim()) return;
    this.offered = true;
    void vscode.window
      .showInformationMessage(
        "Sema needs its server, sema-rpc, which is not installed. Install it into a private Python environment for this extension?",
        "Install",
        "Set Path…",
      )
      .then(async (pick) => {
        if (pick === "Install") {
          if (await this.installInteractive()) onInstalled();
        } else if (pick === "Set Path…") {
          await vscode.commands.executeCommand("workbench.action.openSettings", "sema.serverPath");
        }
      });
  }

  /** "Sema: Install Server": install (or reinstall after an upgrade), saying how it went. */
  async installInteractive(): Promise<boolean> {
    try {
      const command = await this.install();
      void vscode.window.showInformationMessage(`Sema's server is installed (${command}).`);
      return true;
    } catch (err) {
      const message = (err as Error).message;
      this.output.appendLine(`[sema] install failed: ${message}`);
      const pick = await vscode.window.showErrorMessage(`Installing Sema's server failed: ${message}`, "Show Log", "Retry");
      if (pick === "Show Log") this.output.show(true);
      if (pick === "Retry") return this.installInteractive();
      return false;
    }
  }

  /** Install the bundled wheel with a progress notification; one install at a time per window. */
  install(): Promise<string> {
    this.installing ??= this.doInstall().finally(() => (this.installing = undefined));
    return this.installing;
  }

  private async doInstall(): Promise<string> {
    const wheel = this.wheel;
    if (!wheel) throw new Error("this build of the extension ships no server wheel");
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Sema: installing the server", cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        progress.report({ message: `Looking for Python ${MIN_PYTHON.join(".")}+` });
        const python = await this.findPython();
        this.output.appendLine(
          `[sema] Python for the server: ${python.found ? `${python.found.executable} (${python.found.version.join(".")}, ${python.found.source})` : "none suitable"}` +
            `${python.uv ? `; uv: ${python.uv}` : ""}; ${describeSeen(python.seen)}`,
        );
        if (!python.found && !python.uv) {
          throw new Error(
            `it needs Python ${MIN_PYTHON.join(".")} or newer (or uv) and ${describeSeen(python.seen)}. ` +
              "Install a newer Python (or select one with the Python extension), then run “Sema: Install Server”.",
          );
        }
        const started = Date.now();
        const result = await installServer({
          storageDir: this.storageDir,
          wheel,
          python,
          signal: abort.signal,
          log: (text) => this.output.append(text),
          step: (message) => {
            this.output.appendLine(`[sema] ${message}`);
            progress.report({ message });
          },
        });
        this.output.appendLine(
          `[sema] private server ${result.state.version} ${result.installed ? `installed in ${((Date.now() - started) / 1000).toFixed(1)} s` : "already installed"}: ${result.command}`,
        );
        return result.command;
      },
    );
  }

  private async findPython(): Promise<PythonSearch> {
    const preferred: { command: string; source: string }[] = [];
    const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
    if (ext) {
      try {
        const api = ext.isActive ? ext.exports : await ext.activate();
        await api.ready;
        const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
        let exe: string | undefined;
        if (api.environments) {
          const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
          exe = env?.executable.uri?.fsPath;
        }
        exe ??= api.settings?.getExecutionDetails(resource).execCommand?.[0];
        // An interpreter inside an untrusted workspace is the workspace's code: not run.
        const inWorkspace = exe && vscode.workspace.getWorkspaceFolder(vscode.Uri.file(exe)) !== undefined;
        if (exe && inWorkspace && !vscode.workspace.isTrusted) {
          this.output.appendLine(`[sema] not using ${exe} (the Python extension's choice): it is inside an untrusted workspace`);
        } else if (exe) {
          preferred.push({ command: exe, source: "Python extension" });
        }
      } catch (err) {
        this.output.appendLine(`[sema] the Python extension gave no interpreter: ${(err as Error).message}`);
      }
    }
    return findPython(preferred);
  }
}
