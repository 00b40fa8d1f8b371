// The header (title, context used, cost) and the composer's toolbar (mode, permissions,
// model, stop/steer/send), drawn from the host's `state` and `features`.
import type { TokenUsage } from "../src/protocol";
import type { UsageTotals } from "../src/client";
import { formatCost, formatTokens, h } from "./dom";
import { view } from "./state";
import { ui } from "./ui";

/** Context used (of the window) and, when the model's price is known, the session's cost. */
function renderUsage(u: TokenUsage | undefined, totals: UsageTotals | undefined): void {
  const parts: string[] = [];
  let pct = 0;
  if (u && u.maxTokens && u.useTokens !== undefined) {
    pct = Math.round((100 * u.useTokens) / u.maxTokens);
    parts.push(`${formatTokens(u.useTokens)} / ${formatTokens(u.maxTokens)} (${pct}%)`);
  }
  const cost = totals?.costUsd;
  if (cost !== undefined && cost !== null) parts.push(formatCost(cost));
  ui.usage.textContent = parts.join(" · ");
  ui.usage.title = totals
    ? `Context used. Session: ${formatTokens(totals.inputTokens)} in, ${formatTokens(totals.outputTokens)} out, ` +
      `${formatTokens(totals.cacheReadTokens)} cache read, ${formatTokens(totals.cacheWriteTokens)} cache write` +
      (cost === null || cost === undefined ? " (no price known for this model)" : `, ${formatCost(cost)}`)
    : "Context used";
  ui.usage.style.setProperty("--used", `${Math.min(100, pct)}%`);
  ui.usage.classList.toggle("high", pct >= 75);
}

export function renderState(): void {
  const state = view.chat;
  ui.modeBtn.textContent = state.mode;
  ui.modeBtn.classList.toggle("plan", state.mode === "Plan");
  ui.permSelect.value = state.permissionMode;
  ui.stopBtn.classList.toggle("hidden", !state.busy);
  ui.steerBtn.classList.toggle("hidden", !state.busy);
  ui.sendBtn.textContent = state.busy ? "Queue" : "Send";
  ui.sendBtn.title = state.busy ? "Send after the running turn (Enter)" : "Send (Enter)";
  renderUsage(state.usage, state.totals);
  renderModels();
  ui.headerTitle.textContent = state.title || "New chat";
  ui.app.classList.toggle("busy", state.busy);
  if (state.sessionId) ui.app.dataset.session = state.sessionId;
  else delete ui.app.dataset.session;
}

export function renderModels(): void {
  const current = view.chat.model ?? "";
  const models = view.models;
  const listed = models.some((m) => m.name === current);
  const options = models.map((m) => {
    const marks = [m.images ? "images" : "", m.thinking ? "thinking" : ""].filter(Boolean).join(", ");
    return h("option", { value: m.name, title: `${m.provider}/${m.model}` }, marks ? `${m.name} (${marks})` : m.name);
  });
  // A session on a model outside the list (a provider/model spec) still shows it.
  if (current && !listed) options.unshift(h("option", { value: current }, current));
  ui.modelSelect.replaceChildren(...options);
  if (current) ui.modelSelect.value = current;
  ui.modelSelect.classList.toggle("hidden", !view.features.models || models.length === 0);
}
