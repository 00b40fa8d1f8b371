// The sema-rpc wheel the .vsix ships (server/), built from this repository with pip:
// the extension installs it into a private environment when no sema-rpc is found.
//   node scripts/bundle-server.mjs      (SEMA_PYTHON: the Python to build with)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repo = path.resolve(ext, "../..");
const out = path.join(ext, "server");
const venvPython = path.join(repo, ".venv/bin/python");
const python = process.env.SEMA_PYTHON ?? (existsSync(venvPython) ? venvPython : "python3");

rmSync(out, { recursive: true, force: true });
// setuptools reuses build/lib: a module deleted since the last build would ship again.
rmSync(path.join(repo, "build"), { recursive: true, force: true });
mkdirSync(out);
const r = spawnSync(python, ["-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", out, repo], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);
const wheels = readdirSync(out).filter((f) => /^sema_rpc-.+\.whl$/.test(f));
if (wheels.length !== 1) {
  console.error(`expected one sema_rpc wheel in ${out}, found: ${wheels.join(", ") || "none"}`);
  process.exit(1);
}
console.log(`server/${wheels[0]}`);
