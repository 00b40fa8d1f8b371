// The panel's fixed elements, built once; main.ts lays them out.
import { h } from "./dom";

export const ui = {
  app: document.getElementById("app")!,
  headerTitle: h("span", { class: "title" }, "New chat"),
  usage: h("span", { class: "usage", title: "Context used" }),
  server: h("div", { class: "server-status hidden" }),
  log: h("div", { class: "log", role: "log" }),
  welcome: h("div", { class: "welcome" }),
  todos: h("div", { class: "todos hidden" }),
  /** Follow-ups waiting for the running turn; each moves into the transcript when its turn starts. */
  queue: h("div", { class: "queue" }),
  popup: h("div", { class: "completions hidden", role: "listbox" }),
  input: h("textarea", {
    class: "input",
    rows: "1",
    placeholder: "Ask Sema… (@ for files, / for commands)",
    "aria-label": "Message",
  }),
  modeBtn: h("button", { class: "mode", title: "Agent or Plan mode (Plan: read-only)" }, "Agent"),
  permSelect: h(
    "select",
    { class: "perm", title: "Permission mode" },
    h("option", { value: "default" }, "Ask before edits"),
    h("option", { value: "acceptEdits" }, "Accept edits"),
    h("option", { value: "bypass" }, "Bypass (no asking)"),
  ),
  modelSelect: h("select", { class: "model hidden", title: "Model (from the next request)" }),
  /** Images pasted or dropped into the input, sent with the next message. */
  attachments: h("div", { class: "attachments hidden" }),
  stopBtn: h("button", { class: "stop hidden", title: "Stop (session/interrupt)" }, "Stop"),
  steerBtn: h("button", { class: "steer hidden", title: "Add to the running turn (Alt+Enter)" }, "Steer"),
  sendBtn: h("button", { class: "send primary", title: "Send (Enter)" }, "Send"),
} as const;
