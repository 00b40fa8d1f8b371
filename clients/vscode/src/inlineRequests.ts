// The server's requests (consent, questions, plan approval) shown inline in the chat until
// answered there, withdrawn when the server cancels them.
import type { CancellationToken } from "vscode-jsonrpc";
import type { RequestAnswer, ToWebview } from "./messages";
import type { PermissionRequestParams, ServerRequestName, ServerRequests } from "./protocol";

interface PendingRequest {
  method: ServerRequestName;
  params: ServerRequests[ServerRequestName]["params"];
  resolve: (result: RequestAnswer) => void;
}

/** What an unanswered request resolves to when it is withdrawn: consent is refused. */
function refusal(method: ServerRequestName): RequestAnswer {
  return (method === "tool:permission:request" ? { decision: "reject" } : {}) as RequestAnswer;
}

export class InlineRequests {
  private readonly open = new Map<number, PendingRequest>();

  /** `newId` numbers the cards (one counter with the chat's other cards); `post` draws them. */
  constructor(
    private readonly newId: () => number,
    private readonly post: (msg: ToWebview) => void,
  ) {}

  /** Draw the request as a card; resolves with the answer given there (or a refusal when cancelled). */
  ask<K extends ServerRequestName>(
    method: K,
    params: ServerRequests[K]["params"],
    token: CancellationToken,
  ): Promise<ServerRequests[K]["result"]> {
    const id = this.newId();
    return new Promise((resolve) => {
      this.open.set(id, { method, params, resolve: resolve as (r: RequestAnswer) => void });
      token.onCancellationRequested(() => {
        if (!this.open.delete(id)) return;
        this.post({ type: "requestCancelled", id });
        resolve(refusal(method) as never);
      });
      if (method === "tool:permission:request") {
        const p = params as PermissionRequestParams;
        const canDiff = (p.toolName === "Write" || p.toolName === "Edit") && typeof p.input.file_path === "string";
        this.post({ type: "permission", id, params: p, canDiff });
      } else if (method === "ask:question:request") {
        this.post({ type: "question", id, params: params as ServerRequests["ask:question:request"]["params"] });
      } else {
        this.post({ type: "planExit", id, params: params as ServerRequests["plan:exit:request"]["params"] });
      }
    });
  }

  /** The card's answer: the request resolves with it (a second answer is ignored). */
  answer(id: number, result: RequestAnswer): void {
    const pending = this.open.get(id);
    this.open.delete(id);
    pending?.resolve(result);
  }

  /** The permission request a card asks, for "Show diff" (undefined: none, or answered). */
  permission(id: number): PermissionRequestParams | undefined {
    const pending = this.open.get(id);
    return pending?.method === "tool:permission:request" ? (pending.params as PermissionRequestParams) : undefined;
  }

  /** Every open request refused and its card withdrawn (the server that asked is gone). */
  withdrawAll(): void {
    for (const [id, pending] of this.open) {
      pending.resolve({ decision: "reject" });
      this.post({ type: "requestCancelled", id });
    }
    this.open.clear();
  }
}
