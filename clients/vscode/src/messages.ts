// Messages between the extension host and the chat webview (postMessage, both ways): the
// one definition both sides import. Each side switches over the other's messages with an
// `exhaustive` default, so `tsc` fails when one sends a message type the other does not
// handle. Server events travel as the generated protocol types (`WireEvent`).
import type { ModelInfo, RewindResult, TranscriptMessage, TurnDiff, UsageTotals } from "./client";
import type {
  AskQuestionRequestParams,
  NotificationName,
  Notifications,
  PermissionRequestParams,
  PlanExitRequestParams,
  ServerRequestName,
  ServerRequests,
  SessionListItem,
  TokenUsage,
} from "./protocol";

export type Mode = "Agent" | "Plan";
export type PermissionMode = "default" | "acceptEdits" | "bypass";
export type RestoreWhat = "code" | "conversation" | "both";
export type RewindConflict = NonNullable<RewindResult["conflicts"]>[number];

/** An image pasted or dropped into the input: base64 data, sent as an image block. */
export interface ImageAttachment {
  name: string;
  mediaType: string;
  data: string;
}

/** One file of a turn's diff, as the chat lists it (the patch stays in the extension host). */
export type ChangedFile = Omit<TurnDiff["files"][number], "diff">;

export interface ChatState {
  sessionId?: string;
  busy: boolean;
  /** Prompts sent and not answered yet (the running one plus queued follow-ups). */
  pending: number;
  mode: Mode;
  permissionMode: PermissionMode;
  usage?: TokenUsage;
  /** The session's token and cost totals (cost null: no price known for the model). */
  totals?: UsageTotals;
  model?: string | null;
  title?: string;
}

/** Optional server features, from `initialize`'s `capabilities.methods`. */
export interface Features {
  models: boolean;
  messages: boolean;
  rewind: boolean;
  fork: boolean;
}

export interface Completion {
  label: string;
  detail?: string;
  insert: string;
}

/** A server event as the chat renders it: every notification but `turn:diff` (sent as `turnDiff`). */
export type WireEvent = {
  [K in Exclude<NotificationName, "turn:diff">]: { type: "event"; method: K; params: Notifications[K] };
}[Exclude<NotificationName, "turn:diff">];

/** The user's answer to a server→client request (permission, questions, plan). */
export type RequestAnswer = ServerRequests[ServerRequestName]["result"];

/**
 * The `default:` of a switch over `ToWebview`, `FromWebview` or `WireEvent`: it type-checks
 * only when every case is handled above. At run time an unknown message is ignored.
 */
export function exhaustive(unhandled: never): void {
  void unhandled;
}

export type ToWebview =
  | { type: "batch"; items: ToWebview[] }
  | { type: "reset"; notice?: string; resumed?: { title: string; messageCount: number } }
  | WireEvent
  | {
      type: "user";
      text: string;
      delivery: "prompt" | "followUp" | "steer";
      localId: number;
      images: Array<{ name: string; mediaType: string }>;
    }
  /** The server's id of a user message (from the prompt's result): rewind and fork address it. */
  | { type: "messageId"; localId: number; messageId: string }
  | { type: "rewound"; messageId: string; restore: RestoreWhat; restoredFiles: string[] }
  | { type: "redone"; restoredFiles: string[] }
  /** A rewind (or, without `messageId`, a redo) that would overwrite files changed since. */
  | { type: "rewindConflicts"; messageId?: string; restore: RestoreWhat; conflicts: RewindConflict[] }
  /** Text (and images) put back into the input box: a rewound or forked message, a refused send. */
  | { type: "restoreInput"; text: string; images: ImageAttachment[] }
  | { type: "turnEnd"; stopReason: string; error?: string }
  | { type: "permission"; id: number; params: PermissionRequestParams; canDiff: boolean }
  | { type: "question"; id: number; params: AskQuestionRequestParams }
  | { type: "planExit"; id: number; params: PlanExitRequestParams }
  | { type: "requestCancelled"; id: number }
  | { type: "completions"; kind: "file" | "command"; query: string; items: Completion[] }
  | { type: "sessions"; items: SessionListItem[] }
  | { type: "server"; state: "starting" | "ready" | "restarting" | "missing" | "failed"; message?: string }
  | { type: "state"; state: ChatState }
  | { type: "features"; features: Features; models: ModelInfo[] }
  | { type: "turnDiff"; id: number; files: ChangedFile[] }
  | { type: "messages"; messages: TranscriptMessage[] }
  | { type: "inputHistory"; items: string[] }
  | { type: "error"; message: string }
  | { type: "notice"; message: string };

export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string; delivery?: "followUp" | "steer"; images?: ImageAttachment[] }
  | { type: "stop" }
  | { type: "setMode"; mode: Mode }
  | { type: "setPermissionMode"; permissionMode: PermissionMode }
  | { type: "answer"; id: number; result: RequestAnswer }
  | { type: "showDiff"; id: number }
  | { type: "openFile"; path: string; line?: number }
  | { type: "complete"; kind: "file" | "command"; query: string }
  | { type: "newChat" }
  | { type: "listSessions" }
  | { type: "resume"; sessionId: string }
  | { type: "setApiKey" }
  | { type: "openLink"; href: string }
  | { type: "setModel"; model: string }
  | { type: "rewind"; messageId: string; restore: RestoreWhat; force?: boolean }
  | { type: "redo"; force?: boolean }
  | { type: "fork"; messageId: string }
  /** Open a turn's changes: one file in the diff editor, or (no path) the whole patch. */
  | { type: "reviewChanges"; id: number; path?: string }
  | { type: "rendered"; what: "firstToken" | "idle"; at: number; count?: number };
