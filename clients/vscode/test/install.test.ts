// The private server install's pure parts: finding a Python ≥ 3.11 among real interpreters
// and old ones, comparing versions, the bundled wheel, the state file and the install lock.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import {
  bundledWheel,
  compareVersions,
  describeSeen,
  findPython,
  installedServer,
  isSuitable,
  readState,
  wheelVersion,
  withInstallLock,
  writeState,
} from "../src/installCore";

const root = mkdtempSync(path.join(tmpdir(), "sema-vscode-install-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** A real interpreter's own path (the one running the repository's tests). */
function realPython(): { exe: string; version: number[] } {
  const candidates = [process.env.SEMA_PYTHON, path.resolve(__dirname, "../../../../.venv/bin/python"), "python3"];
  for (const c of candidates) {
    if (!c) continue;
    const r = spawnSync(c, ["-c", "import sys; print(sys.executable); print(*sys.version_info[:3])"], { encoding: "utf8" });
    if (r.status === 0) {
      const [exe, version] = r.stdout.trim().split("\n");
      return { exe: exe!, version: version!.split(" ").map(Number) };
    }
  }
  throw new Error("no Python to test with");
}

/** A stand-in for an old interpreter: answers the probe as Python 3.9 would. */
function oldPython(dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\necho "3 9 18 ${file}"\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("findPython", () => {
  const py = realPython();

  it("takes the preferred interpreter (the Python extension's) before PATH's", async () => {
    const empty = path.join(root, "empty");
    mkdirSync(empty);
    const search = await findPython([{ command: py.exe, source: "Python extension" }], empty);
    assert.equal(search.found?.executable, py.exe);
    assert.equal(search.found?.source, "Python extension");
    assert.deepEqual(search.found?.version, py.version);
  });

  it("skips a python3 older than 3.11 on PATH and finds a newer python3.X", async () => {
    const bin = path.join(root, "bin-old-then-new");
    const old = oldPython(bin, "python3");
    const newer = path.join(bin, `python${py.version[0]}.${py.version[1]}`);
    symlinkSync(py.exe, newer);
    const search = await findPython([], bin);
    assert.equal(search.seen[0]?.executable, old);
    assert.deepEqual(search.seen[0]?.version, [3, 9, 18]);
    assert.equal(search.found?.command, newer);
    assert.deepEqual(search.found?.version, py.version);
    assert.equal(search.found?.source, "PATH");
  });

  it("reports every interpreter it saw when none is suitable, and finds uv", async () => {
    const bin = path.join(root, "bin-only-old");
    const old = oldPython(bin, "python3");
    const preferredOld = oldPython(path.join(root, "ext-env"), "python");
    const search = await findPython([{ command: preferredOld, source: "Python extension" }, { command: path.join(root, "missing"), source: "x" }], bin);
    assert.equal(search.found, undefined);
    assert.deepEqual(
      search.seen.map((p) => p.executable),
      [preferredOld, old],
    );
    assert.equal(describeSeen(search.seen), `found ${preferredOld} (3.9.18, Python extension), ${old} (3.9.18, PATH)`);
    assert.equal(search.uv, undefined);
    const uv = path.join(bin, "uv");
    writeFileSync(uv, "#!/bin/sh\n");
    chmodSync(uv, 0o755);
    assert.equal((await findPython([], bin)).uv, uv);
  });

  it("says so when there is no Python at all", async () => {
    const search = await findPython([], path.join(root, "nothing-here"));
    assert.deepEqual(search.seen, []);
    assert.equal(describeSeen(search.seen), "no Python was found");
  });

  it("3.11 is the minimum", () => {
    assert.ok(isSuitable([3, 11, 0]));
    assert.ok(isSuitable([3, 13, 1]));
    assert.ok(isSuitable([4, 0, 0]));
    assert.ok(!isSuitable([3, 10, 14]));
    assert.ok(!isSuitable([2, 7, 18]));
  });
});

describe("versions", () => {
  it("orders releases, pre-releases, dev and post releases", () => {
    const ordered = ["0.1.0.dev1", "0.1.0a1", "0.1.0b2", "0.1.0rc1", "0.1.0", "0.1.0.post1", "0.1.1", "0.2.0", "0.10.0", "1.0"];
    for (let i = 0; i < ordered.length - 1; i++) {
      assert.equal(compareVersions(ordered[i]!, ordered[i + 1]!), -1, `${ordered[i]} < ${ordered[i + 1]}`);
      assert.equal(compareVersions(ordered[i + 1]!, ordered[i]!), 1, `${ordered[i + 1]} > ${ordered[i]}`);
    }
    assert.equal(compareVersions("1.0", "1.0.0"), 0);
    assert.equal(compareVersions("0.1.0", "0.1.0+local"), 0);
  });

  it("reads the version from the wheel's name, and finds the bundled wheel", () => {
    assert.equal(wheelVersion("sema_rpc-0.2.0-py3-none-any.whl"), "0.2.0");
    assert.equal(wheelVersion("/x/sema_rpc-1.0.0rc1-py3-none-any.whl"), "1.0.0rc1");
    assert.equal(wheelVersion("other-0.2.0-py3-none-any.whl"), undefined);
    const dir = path.join(root, "server");
    mkdirSync(dir);
    assert.equal(bundledWheel(dir), undefined);
    writeFileSync(path.join(dir, "README"), "");
    writeFileSync(path.join(dir, "sema_rpc-0.3.1-py3-none-any.whl"), "");
    assert.deepEqual(bundledWheel(dir), { file: path.join(dir, "sema_rpc-0.3.1-py3-none-any.whl"), version: "0.3.1" });
    assert.equal(bundledWheel(path.join(root, "no-such-dir")), undefined);
  });
});

describe("install state", () => {
  it("is written whole and names a venv whose server runs", () => {
    const dir = path.join(root, "state");
    mkdirSync(dir);
    assert.equal(readState(dir), undefined);
    const state = { venv: "venv-0.1.0-x", version: "0.1.0", python: "3.11.7", installedAt: "now" };
    writeState(dir, state);
    assert.deepEqual(readState(dir), state);
    assert.equal(installedServer(dir), undefined, "no executable in the venv yet");
    const bin = path.join(dir, "venv-0.1.0-x", "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "sema-rpc"), "#!/bin/sh\n");
    chmodSync(path.join(bin, "sema-rpc"), 0o755);
    assert.equal(installedServer(dir)?.command, path.join(bin, "sema-rpc"));
    writeFileSync(path.join(dir, "server.json"), "{ half");
    assert.equal(readState(dir), undefined);
  });
});

describe("withInstallLock", () => {
  it("runs two installs one after the other, never together", async () => {
    const dir = path.join(root, "lock");
    const events: string[] = [];
    let waited = 0;
    const job = (name: string) =>
      withInstallLock(
        dir,
        async () => {
          events.push(`${name} start`);
          await new Promise((r) => setTimeout(r, 150));
          events.push(`${name} end`);
          return name;
        },
        { pollMs: 20, onWait: () => waited++ },
      );
    const results = await Promise.all([job("a"), job("b")]);
    assert.deepEqual(results, ["a", "b"]);
    assert.deepEqual(events, ["a start", "a end", "b start", "b end"]);
    assert.equal(waited, 1, "the second one waited");
    assert.ok(!existsSync(path.join(dir, "install.lock")), "released");
  });

  it("takes over a lock whose owner process is gone", async () => {
    const dir = path.join(root, "stale");
    mkdirSync(path.join(dir, "install.lock"), { recursive: true });
    const gone = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    writeFileSync(path.join(dir, "install.lock", "owner"), `${gone.stdout}\n`);
    assert.equal(await withInstallLock(dir, async () => "ran", { pollMs: 20 }), "ran");
  });

  it("releases the lock when the install fails", async () => {
    const dir = path.join(root, "failing");
    await assert.rejects(withInstallLock(dir, async () => Promise.reject(new Error("pip failed"))), /pip failed/);
    assert.ok(!existsSync(path.join(dir, "install.lock")));
  });
});
