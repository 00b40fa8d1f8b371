// Finding the live sema-rpc servers of this user ($SEMA_ROOT/run/<pid>.json), and the
// endpoints a socket connection accepts (a unix path only when it is one of our sockets).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { SemaConnection, SemaError, parseEndpoint } from "../src/client";
import { discoverServers, pidAlive, runDir } from "../src/endpoints";

const root = mkdtempSync(path.join(tmpdir(), "sema-vscode-endpoints-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const done = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  return Number(done.stdout.trim());
}

describe("discoverServers", () => {
  it("lists the files of live processes, newest first, and skips dead pids and unreadable files", () => {
    const dir = path.join(root, "run");
    mkdirSync(dir);
    const live = (n: number, startedAt: string, extra: Record<string, unknown> = {}) =>
      writeFileSync(
        path.join(dir, `${n}-${startedAt}.json`),
        JSON.stringify({ pid: process.pid, endpoint: `unix:${dir}/${n}.sock`, cwd: "/w", startedAt, ...extra }),
      );
    live(1, "2026-01-01T10:00:00Z");
    live(2, "2026-01-01T11:00:00Z", { endpoint: "tcp:127.0.0.1:4000", tokenFile: `${dir}/2.token` });
    const dead = deadPid();
    writeFileSync(path.join(dir, `${dead}.json`), JSON.stringify({ pid: dead, endpoint: `unix:${dir}/x.sock` }));
    writeFileSync(path.join(dir, "broken.json"), "{ not json");
    writeFileSync(path.join(dir, "noendpoint.json"), JSON.stringify({ pid: process.pid }));
    writeFileSync(path.join(dir, `${process.pid}.sock`), "not a description");

    assert.equal(pidAlive(dead), false);
    assert.equal(pidAlive(process.pid), true);
    const servers = discoverServers(dir);
    assert.deepEqual(
      servers.map((s) => [s.endpoint, s.tokenFile]),
      [
        ["tcp:127.0.0.1:4000", `${dir}/2.token`],
        [`unix:${dir}/1.sock`, undefined],
      ],
    );
  });

  it("finds nothing (and does not throw) when the folder does not exist", () => {
    assert.deepEqual(discoverServers(path.join(root, "nowhere")), []);
  });

  it("reads $SEMA_ROOT/run, else ~/.sema/run", () => {
    assert.equal(runDir({ SEMA_ROOT: "/x/root" }), "/x/root/run");
    assert.match(runDir({}), /\.sema\/run$/);
  });
});

describe("socket endpoints", () => {
  it("parses unix and loopback tcp endpoints and refuses anything else", () => {
    assert.deepEqual(parseEndpoint("unix:/a/b.sock"), { kind: "unix", path: "/a/b.sock" });
    assert.deepEqual(parseEndpoint("tcp:127.0.0.1:4000"), { kind: "tcp", host: "127.0.0.1", port: 4000 });
    for (const bad of ["", "unix:", "tcp:127.0.0.1", "http://x", "pipe:/a"]) {
      assert.throws(() => parseEndpoint(bad), SemaError, bad);
    }
  });

  it("never connects through a path that is not a socket, or through a symlink to one", async () => {
    const file = path.join(root, "plain.sock");
    writeFileSync(file, "");
    await assert.rejects(SemaConnection.connect(`unix:${file}`), /is not a socket/);
    await assert.rejects(SemaConnection.connect(`unix:${path.join(root, "missing.sock")}`), /no server listens/);

    const real = path.join(root, "real.sock");
    const server: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(real, resolve));
    try {
      const link = path.join(root, "link.sock");
      symlinkSync(real, link);
      await assert.rejects(SemaConnection.connect(`unix:${link}`), /is not a socket/);
      // The socket itself, ours: connected (and closed by the peer at once).
      const conn = await SemaConnection.connect(`unix:${real}`);
      assert.equal(conn.remote, true);
      await conn.shutdown();
      assert.equal(conn.alive, false);
    } finally {
      server.close();
    }
  });

  it("a tcp endpoint needs its token", async () => {
    await assert.rejects(SemaConnection.connect("tcp:127.0.0.1:9"), /needs its token/);
  });
});
