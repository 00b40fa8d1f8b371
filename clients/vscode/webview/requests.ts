// Inline requests the user answers in the chat: a tool's permission, the agent's questions,
// a plan to approve, and a rewind that would overwrite files changed since.
import type { RequestAnswer, RestoreWhat, RewindConflict } from "../src/messages";
import type { AskQuestionRequestParams, PermissionRequestParams, PlanExitRequestParams, PlanExitResult } from "../src/protocol";
import { MarkdownBlock, repaint } from "./blocks";
import { fileLink, h } from "./dom";
import { send } from "./host";
import { view } from "./state";
import { agent, hideWelcome, setStatus } from "./transcript";
import { ui } from "./ui";

function diffView(text: string): HTMLElement {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
      : line.startsWith("-") && !line.startsWith("---") ? "del"
      : line.startsWith("@@") ? "hunk" : "ctx";
    pre.append(h("span", { class: cls }, line + "\n"));
  }
  return pre;
}

/** A request card answered (or withdrawn): its controls are disabled and the outcome said. */
function markAnswered(el: HTMLElement, outcome: string): void {
  el.classList.add("answered");
  el.querySelectorAll("button, textarea, input").forEach((b) => ((b as HTMLButtonElement).disabled = true));
  el.append(h("div", { class: "outcome muted" }, outcome));
}

export function closeRequest(id: number, outcome: string): void {
  const el = view.openRequests.get(id);
  view.openRequests.delete(id);
  if (el) markAnswered(el, outcome);
}

/** Keeps the server's `requestId` on an open card, so a `request:resolved` can find it. */
function register(id: number, el: HTMLElement, requestId: string | undefined): void {
  if (requestId) el.dataset.requestId = requestId;
  view.openRequests.set(id, el);
}

/** Another client answered first (several clients follow the session): the card the
 * server withdrew says who answered and how, instead of "withdrawn". A card this chat
 * answered itself is left as it is. */
export function resolvedElsewhere(requestId: string, answeredBy: string, outcome: string | undefined): void {
  for (const el of ui.log.querySelectorAll<HTMLElement>(".withdrawn[data-request-id]")) {
    if (el.dataset.requestId !== requestId) continue;
    const said = el.querySelector(".outcome");
    if (said) said.textContent = `Answered in ${answeredBy}${outcome ? `: ${outcome.replace("_", " ")}` : ""}.`;
    el.classList.remove("withdrawn");
  }
}

/** The server withdrew the request (a stopped turn, or another client answered first). */
export function withdrawRequest(id: number): void {
  view.openRequests.get(id)?.classList.add("withdrawn");
  closeRequest(id, "Withdrawn by the agent (the turn was stopped).");
}

function answer(id: number, result: RequestAnswer, outcome: string): void {
  send({ type: "answer", id, result });
  closeRequest(id, outcome);
}

export function permissionCard(id: number, p: PermissionRequestParams, canDiff: boolean): void {
  hideWelcome();
  const card = view.tools.get(p.toolCallId);
  if (card) {
    setStatus(card, "asking");
    card.el.open = true;
  }
  const feedback = h("textarea", { class: "feedback", rows: "1", placeholder: "Feedback for the agent (optional, with Reject)" });
  const decide = (decision: "allow_once" | "allow_always" | "reject", label: string): void => {
    const text = feedback.value.trim();
    const withFeedback = decision === "reject" && text;
    answer(id, withFeedback ? { decision, feedback: text } : { decision }, label + (withFeedback ? `: “${text}”` : ""));
    if (card) setStatus(card, decision === "reject" ? "error" : "running");
  };
  const buttons = h("div", { class: "buttons" });
  if (canDiff) buttons.append(h("button", { class: "show-diff", onclick: () => send({ type: "showDiff", id }) }, "Show diff"));
  if (p.options.includes("allow_once")) buttons.append(h("button", { class: "allow primary", onclick: () => decide("allow_once", "Allowed once") }, "Allow once"));
  if (p.options.includes("allow_always")) {
    const rule = p.alwaysRule ?? p.toolName;
    buttons.append(
      h("button", { class: "allow-always", title: `Stores the rule ${rule} for this project`, onclick: () => decide("allow_always", `Always allowed (${rule})`) }, `Always allow ${rule}`),
    );
  }
  buttons.append(h("button", { class: "reject", onclick: () => decide("reject", "Rejected") }, "Reject"));
  const el = h(
    "div",
    { class: "request permission", "data-request": String(id) },
    h("div", { class: "request-title" }, `Allow ${p.title}?`),
    p.contentKind === "diff" ? diffView(p.content) : h("pre", { class: "command" }, p.content),
    buttons,
    feedback,
  );
  register(id, el, p.requestId);
  // Under its tool card while that card streams in; a call of the earlier conversation (a
  // request sent again on attach) is asked at the bottom, under what the chat said since.
  (card && !card.past ? card.consent : agent(p.agentId).container).append(el);
  repaint();
}

export function questionCard(id: number, p: AskQuestionRequestParams): void {
  hideWelcome();
  const picks = new Map<string, Set<string>>();
  const others = new Map<string, HTMLInputElement>();
  const el = h("div", { class: "request question", "data-request": String(id) });
  for (const q of p.questions) {
    const chosen = new Set<string>();
    picks.set(q.question, chosen);
    const opts = h("div", { class: "options" });
    for (const o of q.options) {
      const btn = h("button", {
        class: "option",
        title: o.description ?? "",
        onclick: () => {
          if (!q.multiSelect) {
            chosen.clear();
            opts.querySelectorAll(".option").forEach((b) => b.classList.remove("chosen"));
          }
          if (chosen.has(o.label)) chosen.delete(o.label);
          else chosen.add(o.label);
          btn.classList.toggle("chosen", chosen.has(o.label));
        },
      }, h("strong", {}, o.label), o.description ? h("span", { class: "muted" }, ` — ${o.description}`) : null);
      opts.append(btn);
    }
    const other = h("input", { class: "other", placeholder: "Or answer in your own words" });
    others.set(q.question, other);
    el.append(h("div", { class: "q-header" }, q.header), h("div", { class: "q-text" }, q.question), opts, other);
  }
  el.append(
    h("div", { class: "buttons" }, h("button", {
      class: "primary",
      onclick: () => {
        const answers: Record<string, string> = {};
        for (const q of p.questions) {
          const own = others.get(q.question)!.value.trim();
          answers[q.question] = own || [...picks.get(q.question)!].join(", ");
        }
        answer(id, { answers }, "Answered");
      },
    }, "Answer")),
  );
  register(id, el, p.requestId);
  agent(p.agentId).container.append(el);
  repaint();
}

export function planCard(id: number, p: PlanExitRequestParams): void {
  hideWelcome();
  const plan = new MarkdownBlock("plan");
  plan.set(p.planContent);
  const feedback = h("textarea", { class: "feedback", rows: "2", placeholder: "What should change in the plan? (with Keep planning)" });
  const decide = (decision: PlanExitResult["decision"], label: string): void => {
    const text = feedback.value.trim();
    answer(id, decision === "keepPlanning" && text ? { decision, feedback: text } : { decision }, label);
  };
  const el = h(
    "div",
    { class: "request plan-exit", "data-request": String(id) },
    h("div", { class: "request-title" }, "Plan ready — ", fileLink(p.planFilePath, undefined, "open the plan file")),
    plan.el,
    h("div", { class: "buttons" },
      h("button", { class: "primary", onclick: () => decide("startEditing", "Started editing") }, "Start editing"),
      h("button", { onclick: () => decide("clearContextAndStart", "Cleared the context and started") }, "Clear context and start"),
      h("button", { onclick: () => decide("keepPlanning", "Kept planning") }, "Keep planning")),
    feedback,
  );
  register(id, el, p.requestId);
  agent(p.agentId).container.append(el);
}

/** A rewind that found files changed since the agent wrote them: overwrite them, or not. */
export function conflictCard(messageId: string | undefined, restore: RestoreWhat, conflicts: RewindConflict[]): void {
  hideWelcome();
  const list = h("ul", { class: "conflicts" });
  for (const c of conflicts) list.append(h("li", {}, fileLink(c.path), h("span", { class: "muted" }, ` — ${c.reason}`)));
  const el = h("div", { class: "request rewind-conflict" });
  const close = (outcome: string): void => markAnswered(el, outcome);
  el.append(
    h("div", { class: "request-title" }, "These files changed after the agent wrote them. Rewinding overwrites those changes:"),
    list,
    h("div", { class: "buttons" },
      h("button", {
        class: "overwrite primary",
        onclick: () => {
          close("Overwritten");
          send(messageId ? { type: "rewind", messageId, restore, force: true } : { type: "redo", force: true });
        },
      }, messageId ? "Overwrite and rewind" : "Overwrite and redo"),
      h("button", { class: "cancel", onclick: () => close(`${messageId ? "Rewind" : "Redo"} cancelled: nothing changed`) }, "Cancel")),
  );
  ui.log.append(el);
  view.stickToBottom = true;
  repaint();
}
