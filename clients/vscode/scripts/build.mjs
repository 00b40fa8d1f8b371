// Build with esbuild: the extension (Node, CommonJS, `vscode` external), the webview
// (browser IIFE + CSS), and with --tests the Node test files.
//   node scripts/build.mjs [--production] [--tests] [--watch]
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");
const common = { bundle: true, logLevel: "warning", sourcemap: !production, minify: production };

const builds = [
  esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "out/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: { webview: "webview/main.ts", "webview-style": "webview/style.css" },
    outdir: "out",
    platform: "browser",
    format: "iife",
    target: "es2022",
  }),
];
if (tests) {
  const entries = readdirSync("test").filter((f) => f.endsWith(".test.ts")).map((f) => `test/${f}`);
  builds.push(
    esbuild.build({
      ...common,
      sourcemap: true,
      minify: false,
      entryPoints: entries,
      outdir: "out/test",
      platform: "node",
      format: "cjs",
      target: "node20",
      external: ["vscode"],
    }),
  );
}
await Promise.all(builds);
