// Checked by `tsc --noEmit -p .` (not run): the host↔webview messages are held to the
// generated protocol, and `exhaustive` accepts only a switch that handled every case.
import { exhaustive, type FromWebview, type ToWebview, type WireEvent } from "../src/messages";

export function typeChecks(to: ToWebview, from: FromWebview): void {
  // A message still unhandled reaches `exhaustive` as itself, not `never`: a compile error.
  // @ts-expect-error
  exhaustive(to);
  // @ts-expect-error
  exhaustive(from);

  // Server events carry the generated protocol's methods and params.
  const ok: WireEvent = { type: "event", method: "message:text:chunk", params: { delta: "hi", agentId: "main" } };
  // @ts-expect-error an event the protocol does not have
  const unknown: WireEvent = { type: "event", method: "message:text:chunks", params: { delta: "hi" } };
  // @ts-expect-error params of the wrong shape
  const wrong: WireEvent = { type: "event", method: "tool:execution:start", params: { toolCallId: "1" } };
  // @ts-expect-error turn:diff reaches the webview as `turnDiff`, never as an event
  const diff: WireEvent = { type: "event", method: "turn:diff", params: { files: [] } };

  // The answer to a server→client request is one of the protocol's results.
  const answer: FromWebview = { type: "answer", id: 1, result: { decision: "allow_once" } };
  // @ts-expect-error a decision no request offers
  const badAnswer: FromWebview = { type: "answer", id: 1, result: { decision: "maybe" } };
  void [ok, unknown, wrong, diff, answer, badAnswer];
}
