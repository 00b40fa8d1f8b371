// The project's saved sessions: on the welcome screen and in the "History" overlay.
import type { SessionListItem } from "../src/protocol";
import { h } from "./dom";
import { send } from "./host";
import { view } from "./state";
import { ui } from "./ui";

function sessionList(): HTMLElement {
  const list = h("div", { class: "session-list" });
  for (const s of view.sessions) list.append(sessionItem(s));
  return list;
}

export function renderWelcome(): void {
  ui.welcome.replaceChildren(
    h("h2", {}, "Sema"),
    h("p", { class: "muted" }, "Ask about this workspace, or have Sema change it. Every write asks you first."),
    view.sessions.length ? h("h3", {}, "Recent sessions") : "",
    sessionList(),
  );
}

function closeOverlay(): void {
  view.sessionsOverlay?.remove();
  view.sessionsOverlay = undefined;
}

function sessionItem(s: SessionListItem): HTMLElement {
  const when = new Date(s.updatedAt);
  return h(
    "button",
    {
      class: "session-item",
      "data-session": s.sessionId,
      title: `Resume ${s.sessionId}`,
      onclick: () => {
        closeOverlay();
        send({ type: "resume", sessionId: s.sessionId });
      },
    },
    h("span", { class: "session-title" }, s.title || s.sessionId),
    h("span", { class: "muted" }, `${s.messageCount} messages · ${when.toLocaleString()}`),
  );
}

export function toggleSessions(): void {
  if (view.sessionsOverlay) {
    closeOverlay();
    return;
  }
  view.sessionsOverlay = h("div", { class: "sessions-overlay" }, h("h3", {}, "Sessions"), h("p", { class: "muted" }, "Loading…"));
  ui.app.append(view.sessionsOverlay);
  send({ type: "listSessions" });
}

/** The host's `sessions` answer: shown wherever the list is on screen. */
export function showSessions(items: SessionListItem[]): void {
  view.sessions = items;
  if (ui.welcome.isConnected) renderWelcome();
  if (!view.sessionsOverlay) return;
  view.sessionsOverlay.replaceChildren(
    h("h3", {}, "Sessions"),
    view.sessions.length ? sessionList() : h("p", { class: "muted" }, "No saved sessions in this folder yet."),
  );
}
