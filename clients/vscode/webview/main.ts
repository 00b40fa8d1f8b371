// The chat webview: lays out the panel and routes each message from the extension host to
// the part of the view it changes. `ToWebview` is the host's type: a message type added
// there and not handled here fails `tsc`.
import { exhaustive, type ToWebview } from "../src/messages";
import { repaint } from "./blocks";
import { installComposer, addInputHistory, restoreInput, showCompletions, takeBackRestoredInput } from "./composer";
import { h } from "./dom";
import { onEvent } from "./events";
import { send } from "./host";
import { conflictCard, permissionCard, planCard, questionCard, withdrawRequest } from "./requests";
import { renderWelcome, showSessions, toggleSessions } from "./sessions";
import { view } from "./state";
import { renderModels, renderState } from "./toolbar";
import {
  errorBox,
  mainAgent,
  notice,
  renderConversation,
  resetTranscript,
  setMessageId,
  showResumed,
  showUserMessage,
  turnDiffCard,
} from "./transcript";
import { ui } from "./ui";

ui.app.append(
  h(
    "div",
    { class: "header" },
    ui.headerTitle,
    ui.usage,
    h("span", { class: "spacer" }),
    h("button", { class: "icon sessions-btn", title: "Sessions", onclick: () => toggleSessions() }, "History"),
    h("button", { class: "icon new-chat", title: "New chat", onclick: () => send({ type: "newChat" }) }, "New"),
  ),
  ui.server,
  ui.log,
  ui.todos,
  ui.queue,
  h(
    "div",
    { class: "composer" },
    ui.popup,
    ui.attachments,
    ui.input,
    h(
      "div",
      { class: "toolbar" },
      ui.modeBtn,
      ui.permSelect,
      ui.modelSelect,
      h("span", { class: "spacer" }),
      ui.stopBtn,
      ui.steerBtn,
      ui.sendBtn,
    ),
  ),
);
ui.log.append(ui.welcome);

ui.log.addEventListener("scroll", () => {
  view.stickToBottom = ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 40;
});

// Links in rendered markdown open outside the webview (or as files, for a relative path).
document.addEventListener("click", (ev) => {
  const a = (ev.target as HTMLElement).closest("a");
  if (a && !a.classList.contains("file-link")) {
    ev.preventDefault();
    const href = a.getAttribute("href");
    if (href) send({ type: "openLink", href });
  }
});

function serverStatus(msg: Extract<ToWebview, { type: "server" }>): void {
  ui.server.className = `server-status ${msg.state}`;
  ui.server.textContent =
    msg.state === "ready" ? "" : msg.state === "starting" ? "Starting sema-rpc…" : msg.state === "restarting" ? "Restarting sema-rpc…" : msg.message ?? msg.state;
  ui.server.classList.toggle("hidden", msg.state === "ready");
}

function restoredFiles(files: string[]): string {
  return files.length ? ` Restored: ${files.join(", ")}.` : "";
}

function handle(msg: ToWebview): void {
  switch (msg.type) {
    case "batch":
      msg.items.forEach(handle);
      break;
    case "event":
      onEvent(msg);
      break;
    case "user":
      showUserMessage(msg);
      break;
    case "restoreInput":
      restoreInput(msg.text, msg.images);
      break;
    case "turnEnd":
      mainAgent().settle();
      if (msg.stopReason === "error" && msg.error) errorBox(msg.error);
      if (msg.stopReason === "max_turns") notice("Stopped: the turn reached its limit of model calls.");
      view.turnEndedPendingIdle = true;
      repaint();
      break;
    case "permission":
      permissionCard(msg.id, msg.params, msg.canDiff);
      break;
    case "question":
      questionCard(msg.id, msg.params);
      break;
    case "planExit":
      planCard(msg.id, msg.params);
      break;
    case "requestCancelled":
      withdrawRequest(msg.id);
      break;
    case "completions":
      showCompletions(msg);
      break;
    case "sessions":
      showSessions(msg.items);
      break;
    case "server":
      serverStatus(msg);
      break;
    case "state":
      view.chat = msg.state;
      renderState();
      break;
    case "features":
      view.features = msg.features;
      view.models = msg.models;
      renderModels();
      break;
    case "inputHistory":
      addInputHistory(msg.items);
      break;
    case "messageId":
      setMessageId(msg.localId, msg.messageId);
      break;
    case "rewound": {
      const what = { both: "the files and the conversation", code: "the files", conversation: "the conversation" }[msg.restore];
      const el = notice(`Rewound ${what} to before that message.${restoredFiles(msg.restoredFiles)} `, "notice rewound");
      // Until something else happens, the rewind can be undone.
      el.append(h("button", { class: "redo", title: "Put back what this rewind changed", onclick: () => send({ type: "redo" }) }, "Redo"));
      break;
    }
    case "redone":
      takeBackRestoredInput();
      notice(`Redone: the rewind is undone.${restoredFiles(msg.restoredFiles)}`, "notice redone");
      break;
    case "rewindConflicts":
      conflictCard(msg.messageId, msg.restore, msg.conflicts);
      break;
    case "turnDiff":
      turnDiffCard(msg.id, msg.files);
      break;
    case "messages":
      renderConversation(msg.messages);
      break;
    case "reset":
      resetTranscript();
      if (msg.notice) notice(msg.notice);
      if (msg.resumed) showResumed(msg.resumed.title, msg.resumed.messageCount);
      break;
    case "error":
      errorBox(msg.message);
      break;
    case "notice":
      notice(msg.message);
      break;
    default:
      exhaustive(msg);
  }
}

installComposer();
window.addEventListener("message", (ev: MessageEvent<ToWebview>) => handle(ev.data));
renderWelcome();
renderState();
send({ type: "ready" });
ui.input.focus();
