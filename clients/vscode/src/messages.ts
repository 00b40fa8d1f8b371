// Messages between the extension host and the chat webview (postMessage, both ways).
import type {
  AskQuestionRequestParams,
  PermissionRequestParams,
  PlanExitRequestParams,
  SessionListItem,
  TokenUsage,
} from "./protocol";

export type Mode = "Agent" | "Plan";
export type PermissionMode = "default" | "acceptEdits" | "bypass";

export interface ChatState {
  sessionId?: string;
  busy: boolean;
  /** Prompts sent and not answered yet (the running one plus queued follow-ups). */
  pending: number;
  mode: Mode;
  permissionMode: PermissionMode;
  usage?: TokenUsage;
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

export type ToWebview =
  | { type: "batch"; items: ToWebview[] }
  | { type: "reset"; notice?: string; resumed?: { title: string; messageCount: number } }
  | { type: "event"; method: string; params: Record<string, unknown> & { agentId?: string } }
  | { type: "user"; text: string; delivery: "prompt" | "followUp" | "steer"; localId: number }
  /** The server's id of a user message (when it gives one): rewind and fork address it. */
  | { type: "messageId"; localId: number; messageId: string }
  | { type: "rewound"; messageId: string; conversation: boolean }
  | { type: "turnEnd"; stopReason: string; error?: string }
  | { type: "permission"; id: number; params: PermissionRequestParams; canDiff: boolean }
  | { type: "question"; id: number; params: AskQuestionRequestParams }
  | { type: "planExit"; id: number; params: PlanExitRequestParams }
  | { type: "requestCancelled"; id: number }
  | { type: "completions"; kind: "file" | "command"; query: string; items: Completion[] }
  | { type: "sessions"; items: SessionListItem[] }
  | { type: "server"; state: "starting" | "ready" | "restarting" | "missing" | "failed"; message?: string }
  | { type: "state"; state: ChatState }
  | { type: "features"; features: Features; models?: string[] }
  | { type: "turnDiff"; id: number; files: number }
  | { type: "messages"; messages: Array<Record<string, unknown>> }
  | { type: "inputHistory"; items: string[] }
  | { type: "error"; message: string }
  | { type: "notice"; message: string };

export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string; delivery?: "followUp" | "steer" }
  | { type: "stop" }
  | { type: "setMode"; mode: Mode }
  | { type: "setPermissionMode"; permissionMode: PermissionMode }
  | { type: "answer"; id: number; result: Record<string, unknown> }
  | { type: "showDiff"; id: number }
  | { type: "openFile"; path: string; line?: number }
  | { type: "complete"; kind: "file" | "command"; query: string }
  | { type: "newChat" }
  | { type: "listSessions" }
  | { type: "resume"; sessionId: string }
  | { type: "setApiKey" }
  | { type: "openLink"; href: string }
  | { type: "setModel"; model: string }
  | { type: "rewind"; messageId: string; restore: "code" | "conversation" | "both" }
  | { type: "fork"; messageId: string }
  | { type: "reviewChanges"; id: number }
  | { type: "rendered"; what: "firstToken" | "idle"; at: number; count?: number };
