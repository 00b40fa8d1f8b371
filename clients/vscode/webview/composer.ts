// The composer: the input box (history, @file and /command completion, pasted or dropped
// images) and its send, steer, stop, mode, permission and model controls.
import type { ChatState, ImageAttachment, ToWebview } from "../src/messages";
import { h } from "./dom";
import { send } from "./host";
import { view, type CompletionToken } from "./state";
import { notice } from "./transcript";
import { ui } from "./ui";

const input = ui.input;

function submit(delivery?: "followUp" | "steer"): void {
  const text = input.value.trim();
  if (!text && !view.attachments.length) return;
  closePopup();
  if (text && view.inputHistory[0] !== text) view.inputHistory.unshift(text);
  view.historyPos = -1;
  input.value = "";
  autosize();
  view.awaitingFirstToken = true;
  const images = view.attachments;
  setAttachments([]);
  send({ type: "send", text, delivery, ...(images.length ? { images } : {}) });
}

function setAttachments(items: ImageAttachment[]): void {
  view.attachments = items;
  ui.attachments.replaceChildren(
    ...items.map((a, i) =>
      h("span", { class: "attachment", title: a.mediaType }, `image: ${a.name}`,
        h("button", { class: "remove", title: "Remove", onclick: () => setAttachments(view.attachments.filter((_, j) => j !== i)) }, "×")),
    ),
  );
  ui.attachments.classList.toggle("hidden", items.length === 0);
}

/** Images the provider APIs take; anything else pasted or dropped is refused in place. */
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

function attachFiles(files: Iterable<File>): boolean {
  let any = false;
  for (const file of files) {
    if (!file.type.startsWith("image/")) continue;
    any = true;
    if (!IMAGE_TYPES.includes(file.type)) {
      notice(`${file.name || "That image"} is ${file.type}: only PNG, JPEG, GIF and WebP images can be sent.`);
      continue;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      notice(`${file.name || "That image"} is larger than 5 MB, the limit of the model APIs.`);
      continue;
    }
    const current = view.models.find((m) => m.name === view.chat.model);
    if (current && !current.images) {
      notice(`${current.name} does not take images: pick a model that does (marked "images" in the picker).`, "notice no-images");
      continue;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      const data = url.slice(url.indexOf(",") + 1);
      setAttachments([...view.attachments, { name: file.name || `pasted.${file.type.slice(6)}`, mediaType: file.type, data }]);
    };
    reader.readAsDataURL(file);
  }
  return any;
}

function autosize(): void {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

/** Text (and images) put back into the input: a rewound or forked message, a refused send. */
export function restoreInput(text: string, images: ImageAttachment[]): void {
  view.restoredInput = text;
  input.value = text;
  autosize();
  if (images.length) setAttachments(images);
  input.focus();
}

/** A redo takes the rewound message back out of the input, unless it was edited since. */
export function takeBackRestoredInput(): void {
  if (view.restoredInput !== undefined && input.value === view.restoredInput) {
    input.value = "";
    autosize();
  }
}

/** Earlier prompts from the host (this project's input history), after the ones typed here. */
export function addInputHistory(items: string[]): void {
  view.inputHistory = [...new Set([...view.inputHistory, ...items])];
}

// ------------------------------------------------------------------ completion popup
function currentToken(): CompletionToken | undefined {
  const caret = input.selectionStart ?? 0;
  const before = input.value.slice(0, caret);
  const cmd = /^\/(\S*)$/.exec(before);
  if (cmd) return { kind: "command", start: 0, query: cmd[1]! };
  const file = /(^|\s)@([^\s@"']*)$/.exec(before);
  if (file) return { kind: "file", start: caret - file[2]!.length - 1, query: file[2]! };
  return undefined;
}

function closePopup(): void {
  ui.popup.classList.add("hidden");
  view.completions = [];
  view.completionToken = undefined;
}

function renderPopup(): void {
  const popup = ui.popup;
  popup.replaceChildren();
  if (!view.completions.length) {
    popup.classList.add("hidden");
    return;
  }
  popup.classList.remove("hidden");
  view.completions.forEach((c, i) => {
    popup.append(
      h("div", {
        class: `completion${i === view.selected ? " selected" : ""}`,
        role: "option",
        onmousedown: (ev: Event) => {
          ev.preventDefault();
          view.selected = i;
          acceptCompletion();
        },
      }, h("span", { class: "label" }, c.label), c.detail ? h("span", { class: "muted" }, ` ${c.detail}`) : null),
    );
  });
}

/** The host's completions, shown if they still answer what is being typed. */
export function showCompletions(msg: Extract<ToWebview, { type: "completions" }>): void {
  const tok = view.completionToken;
  if (tok && tok.kind === msg.kind && tok.query === msg.query) {
    view.completions = msg.items;
    view.selected = 0;
    renderPopup();
  }
}

function acceptCompletion(): void {
  const c = view.completions[view.selected];
  const tok = view.completionToken;
  if (!c || !tok) return;
  const caret = input.selectionStart ?? input.value.length;
  input.value = input.value.slice(0, tok.start) + c.insert + input.value.slice(caret);
  const pos = tok.start + c.insert.length;
  input.setSelectionRange(pos, pos);
  closePopup();
  input.focus();
}

/** Arrow keys, Enter, Tab and Escape while the popup is open; true when the key was used. */
function popupKey(ev: KeyboardEvent): boolean {
  const n = view.completions.length;
  if (ui.popup.classList.contains("hidden") || n === 0) return false;
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    view.selected = (view.selected + (ev.key === "ArrowDown" ? 1 : n - 1)) % n;
    renderPopup();
    return true;
  }
  if (ev.key === "Enter" || ev.key === "Tab") {
    ev.preventDefault();
    acceptCompletion();
    return true;
  }
  if (ev.key === "Escape") {
    closePopup();
    return true;
  }
  return false;
}

/** ArrowUp at the start (or in an empty input) and ArrowDown at the end browse the history. */
function historyKey(ev: KeyboardEvent): void {
  const atStart = input.selectionStart === 0 && input.selectionEnd === 0;
  const atEnd = input.selectionStart === input.value.length;
  const history = view.inputHistory;
  if (ev.key === "ArrowUp" && (atStart || !input.value) && history.length) {
    ev.preventDefault();
    if (view.historyPos === -1) view.draft = input.value;
    view.historyPos = Math.min(view.historyPos + 1, history.length - 1);
    input.value = history[view.historyPos]!;
    autosize();
  } else if (ev.key === "ArrowDown" && atEnd && view.historyPos >= 0) {
    ev.preventDefault();
    view.historyPos--;
    input.value = view.historyPos >= 0 ? history[view.historyPos]! : view.draft;
    autosize();
  }
}

function onKeydown(ev: KeyboardEvent): void {
  if (popupKey(ev)) return;
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    submit(ev.altKey && view.chat.busy ? "steer" : undefined);
    return;
  }
  if (ev.key === "Escape" && view.chat.busy) {
    send({ type: "stop" });
    return;
  }
  historyKey(ev);
}

function onInput(): void {
  autosize();
  const tok = currentToken();
  if (!tok) {
    closePopup();
    return;
  }
  view.completionToken = tok;
  if (view.completeTimer) clearTimeout(view.completeTimer);
  view.completeTimer = window.setTimeout(() => send({ type: "complete", kind: tok.kind, query: tok.query }), 60);
}

/** The composer's listeners (once, at start). */
export function installComposer(): void {
  input.addEventListener("paste", (ev) => {
    const files = ev.clipboardData?.files;
    if (files && files.length && attachFiles(Array.from(files))) ev.preventDefault();
  });
  input.addEventListener("dragover", (ev) => {
    if (ev.dataTransfer?.types.includes("Files")) ev.preventDefault();
  });
  input.addEventListener("drop", (ev) => {
    const files = ev.dataTransfer?.files;
    if (files && files.length && attachFiles(Array.from(files))) ev.preventDefault();
  });
  input.addEventListener("input", onInput);
  input.addEventListener("keydown", onKeydown);
  ui.sendBtn.addEventListener("click", () => submit());
  ui.steerBtn.addEventListener("click", () => submit("steer"));
  ui.stopBtn.addEventListener("click", () => send({ type: "stop" }));
  ui.modeBtn.addEventListener("click", () => send({ type: "setMode", mode: view.chat.mode === "Agent" ? "Plan" : "Agent" }));
  ui.modelSelect.addEventListener("change", () => send({ type: "setModel", model: ui.modelSelect.value }));
  ui.permSelect.addEventListener("change", () =>
    send({ type: "setPermissionMode", permissionMode: ui.permSelect.value as ChatState["permissionMode"] }),
  );
}
