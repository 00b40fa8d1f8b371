// The server's events, as the host forwards them (typed by the generated protocol): each
// becomes a change in the transcript, the todo list or the toolbar.
import { exhaustive, type WireEvent } from "../src/messages";
import type { TodoItem, ToolExecutionCompleteParams, ToolExecutionErrorParams } from "../src/protocol";
import { h, fileLink, formatTokens } from "./dom";
import { resolvedElsewhere } from "./requests";
import { view } from "./state";
import { renderState } from "./toolbar";
import { agent, errorBox, findTaskCard, hideWelcome, linkedOutput, mainAgent, notice, setStatus, startQueuedTurn, toolCard } from "./transcript";
import { ui } from "./ui";

function toolEnded(p: ToolExecutionCompleteParams | ToolExecutionErrorParams, failed: boolean): void {
  const card = view.tools.get(p.toolCallId);
  if (!card) return;
  setStatus(card, failed ? "error" : "done");
  if ("summary" in p && p.summary) card.summary.textContent = p.summary;
  if (typeof p.content === "string" && (card.name === "Grep" || card.name === "Glob")) {
    card.output.el.replaceChildren(linkedOutput(p.content));
  } else if (typeof p.content === "string" && card.name !== "Task") {
    card.output.set(p.content);
  }
  if (failed) card.el.open = true;
}

function renderTodos(todos: TodoItem[]): void {
  ui.todos.replaceChildren();
  if (!todos.length) {
    ui.todos.classList.add("hidden");
    return;
  }
  ui.todos.classList.remove("hidden");
  const mark = { completed: "☑", in_progress: "▶", pending: "☐" } as Record<string, string>;
  for (const t of todos) {
    ui.todos.append(h("div", { class: `todo ${t.status}` }, `${mark[t.status] ?? "☐"} ${t.status === "in_progress" ? t.activeForm : t.content}`));
  }
}

export function onEvent(event: WireEvent): void {
  switch (event.method) {
    case "message:text:chunk":
      hideWelcome();
      agent(event.params.agentId).answer().append(String(event.params.delta));
      break;
    case "message:thinking:chunk":
      hideWelcome();
      agent(event.params.agentId).think().append(String(event.params.delta));
      break;
    case "message:complete": {
      const p = event.params;
      const a = agent(p.agentId);
      // Subagents stream no chunks: their text arrives whole, with the message.
      if (p.agentId && p.agentId !== "main" && typeof p.content === "string" && p.content && !a.text) {
        a.answer().set(p.content);
      }
      a.settle();
      break;
    }
    case "tool:execution:start": {
      const p = event.params;
      hideWelcome();
      toolCard(agent(p.agentId), String(p.toolCallId), String(p.toolName), String(p.title), p.input ?? {});
      break;
    }
    case "tool:execution:update":
      view.tools.get(String(event.params.toolCallId))?.output.append(String(event.params.delta));
      break;
    case "tool:execution:complete":
      toolEnded(event.params, false);
      break;
    case "tool:execution:error":
      toolEnded(event.params, true);
      break;
    case "task:agent:start": {
      const p = event.params;
      const card = findTaskCard(String(p.taskId));
      if (card?.subagent) {
        view.agents.set(String(p.taskId), card.subagent);
        card.subagent.container.dataset.agent = String(p.taskId);
        card.subagent.container.prepend(h("div", { class: "agent-status muted" }, `${String(p.subagentType)} working…`));
      }
      break;
    }
    case "task:agent:end": {
      const p = event.params;
      const card = findTaskCard(String(p.taskId));
      const status = card?.subagent?.container.querySelector(".agent-status");
      if (status) status.textContent = String(p.status);
      if (card && p.status !== "completed") setStatus(card, "error");
      break;
    }
    case "todos:update":
      renderTodos(event.params.todos ?? []);
      break;
    case "session:error": {
      const p = event.params;
      errorBox(`${String(p.type)}: ${p.error?.message ?? "error"}`, agent(p.agentId).container);
      break;
    }
    case "config:no_models":
      errorBox(`${String(event.params.message)} ${String(event.params.suggestion ?? "")}`, ui.log, true);
      break;
    case "session:interrupted":
      notice("Interrupted.", "notice interrupted", agent(event.params.agentId).container);
      mainAgent().settle();
      break;
    case "compact:exec": {
      const p = event.params;
      notice(`Context compacted (${String(p.strategy)}): ${formatTokens(Number(p.tokenBefore))} → ${formatTokens(Number(p.tokenCompact))} tokens${p.errMsg ? ` — ${String(p.errMsg)}` : ""}`);
      break;
    }
    case "session:cleared":
      notice("Context cleared.");
      break;
    case "state:update":
      if (event.params.state === "processing" && (!event.params.agentId || event.params.agentId === "main")) {
        if (view.expectTurnStart > 0) view.expectTurnStart--;
        else startQueuedTurn();
      }
      break;
    case "mode:update":
      view.chat.mode = event.params.mode;
      renderState();
      break;
    case "file:reference": {
      const refs = event.params.references ?? [];
      const el = h("div", { class: "notice refs" }, "Attached: ");
      refs.forEach((r, i) => {
        if (i) el.append(", ");
        el.append(r.error ? h("span", { class: "ref-error", title: r.error }, r.name) : fileLink(r.name));
      });
      hideWelcome();
      ui.log.append(el);
      break;
    }
    case "request:resolved":
      resolvedElsewhere(event.params.requestId, event.params.answeredBy, event.params.outcome ?? undefined);
      break;
    // Shown through the host's `state` message (title, usage, model, sandbox), not here.
    case "session:ready":
    case "conversation:usage":
    case "model:update":
    case "sandbox:update":
    case "turn:continued":
      break;
    default:
      exhaustive(event);
  }
}
