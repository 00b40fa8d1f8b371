// Small DOM and formatting helpers shared by every part of the chat view.
import { send } from "./host";

type Attrs = Record<string, string | boolean | ((ev: Event) => void)>;

/** An element with attributes (`on…` functions become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** A workspace path that opens in the editor (at `line`, when given). */
export function fileLink(path: string, line?: number, label?: string): HTMLAnchorElement {
  return h(
    "a",
    {
      class: "file-link",
      href: "#",
      title: `Open ${path}${line ? `:${line}` : ""}`,
      onclick: (ev: Event) => {
        ev.preventDefault();
        ev.stopPropagation();
        send({ type: "openFile", path, line });
      },
    },
    label ?? (line ? `${path}:${line}` : path),
  );
}

export function formatTokens(n = 0): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)}k` : String(n);
}

export function formatCost(usd: number): string {
  return usd >= 1 ? `$${usd.toFixed(2)}` : usd >= 0.01 ? `$${usd.toFixed(3)}` : `$${usd.toFixed(4)}`;
}
