// The extension's pure parts: finding the server, the proposed content for "Show diff",
// and where a streaming answer can be frozen.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { findServer, proposedContent, reversePatch, sandboxLabel, ServerMissingError } from "../src/util";
import { stablePrefix } from "../webview/markdown";

const root = mkdtempSync(path.join(tmpdir(), "sema-vscode-units-"));
after(() => rmSync(root, { recursive: true, force: true }));

describe("findServer", () => {
  const bin = path.join(root, "bin");
  const other = path.join(root, "other");
  mkdirSync(bin);
  mkdirSync(other);
  const exe = path.join(bin, "sema-rpc");
  writeFileSync(exe, "#!/bin/sh\n");
  chmodSync(exe, 0o755);
  writeFileSync(path.join(other, "sema-rpc"), "not executable");

  it("uses sema.serverPath when it is set", () => {
    assert.equal(findServer(exe, ""), exe);
  });
  it("says so when sema.serverPath is wrong, with the install command", () => {
    assert.throws(
      () => findServer(path.join(root, "nope"), bin),
      (e: Error) => e instanceof ServerMissingError && /not an executable file/.test(e.message) && /Sema: Install Server/.test(e.message),
    );
  });
  it("else finds sema-rpc on PATH, skipping files that cannot run", () => {
    assert.equal(findServer("", [other, bin].join(path.delimiter)), exe);
  });
  it("else explains how to install it", () => {
    assert.throws(
      () => findServer("", other),
      (e: Error) => e instanceof ServerMissingError && /not found on PATH/.test(e.message) && /sema\.serverPath/.test(e.message),
    );
  });
});

describe("proposedContent", () => {
  const file = path.join(root, "a.txt");
  writeFileSync(file, "one\ntwo\ntwo\n");
  it("Write: the new content; a new file has no before", () => {
    assert.deepEqual(proposedContent("Write", { content: "x\n" }, path.join(root, "new.txt")), { before: undefined, after: "x\n" });
    assert.deepEqual(proposedContent("Write", { content: "x\n" }, file), { before: "one\ntwo\ntwo\n", after: "x\n" });
  });
  it("Edit: one replacement, or all with replace_all; `$` in the new text is literal", () => {
    assert.equal(proposedContent("Edit", { old_string: "two", new_string: "$&2" }, file)?.after, "one\n$&2\ntwo\n");
    assert.equal(proposedContent("Edit", { old_string: "two", new_string: "2", replace_all: true }, file)?.after, "one\n2\n2\n");
  });
  it("Edit whose old text is missing: no diff to show", () => {
    assert.equal(proposedContent("Edit", { old_string: "three", new_string: "3" }, file), undefined);
  });
});

describe("stablePrefix", () => {
  it("ends at the last blank line outside a code fence", () => {
    const text = "para one\n\npara two\n\nstill growing";
    assert.equal(text.slice(0, stablePrefix(text)), "para one\n\npara two\n\n");
  });
  it("never cuts inside an open fence", () => {
    const text = "intro\n\n```js\nconst a = 1;\n\nconst b = 2;\n";
    assert.equal(text.slice(0, stablePrefix(text)), "intro\n\n");
  });
  it("cuts after a closed fence", () => {
    const text = "```\ncode\n\nmore\n```\n\nafter";
    assert.equal(text.slice(0, stablePrefix(text)), "```\ncode\n\nmore\n```\n\n");
  });
  it("nothing stable in a single growing paragraph", () => {
    assert.equal(stablePrefix("w0 w1 w2 w3"), 0);
  });
});

describe("reversePatch", () => {
  const diff = [
    "--- a/f.txt",
    "+++ b/f.txt",
    "@@ -1,3 +1,3 @@",
    " one",
    "-two",
    "+TWO",
    " three",
    "@@ -6,2 +6,3 @@",
    " six",
    " seven",
    "+eight",
  ].join("\n");
  const after = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n";

  it("rebuilds the content before the change from the content after it", () => {
    assert.equal(reversePatch(diff, after), "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
  });
  it("gives up when the file changed again since", () => {
    assert.equal(reversePatch(diff, after.replace("TWO", "2")), undefined);
  });
  it("a deleted file comes back whole; an added one was empty", () => {
    assert.equal(reversePatch("@@ -1,2 +0,0 @@\n-a\n-b\n", ""), "a\nb\n");
    assert.equal(reversePatch("@@ -0,0 +1 @@\n+new\n", "new\n"), "");
  });
  it("keeps a missing final newline", () => {
    const noNewline = "@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n";
    assert.equal(reversePatch(noNewline, "new\n"), "old");
  });
});

describe("sandboxLabel", () => {
  it("names the mode, warns when the sandbox is off or missing, and says why", () => {
    assert.equal(sandboxLabel(undefined), undefined);
    assert.match(sandboxLabel({ mode: "workspace-write", available: true })!.text, /workspace/);
    assert.equal(sandboxLabel({ mode: "workspace-write", available: true })!.warning, false);
    assert.match(sandboxLabel({ mode: "read-only", available: true })!.text, /read-only/);
    assert.equal(sandboxLabel({ mode: "off", available: true })!.warning, true);
    const missing = sandboxLabel({ mode: "off", available: false, reason: "Landlock is unavailable" })!;
    assert.match(missing.text, /no sandbox/);
    assert.match(missing.tooltip, /Landlock is unavailable/);
  });
});
