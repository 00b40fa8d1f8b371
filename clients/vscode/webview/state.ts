// Everything the chat view remembers between messages, in one object (the DOM holds the rest).
import type { ModelInfo } from "../src/client";
import type { ChatState, Completion, Features, ImageAttachment } from "../src/messages";
import type { SessionListItem } from "../src/protocol";
import type { AgentView } from "./blocks";
import type { ToolCard } from "./transcript";

/** The `@file` or `/command` being typed, which the completion popup completes. */
export interface CompletionToken {
  kind: "file" | "command";
  start: number;
  query: string;
}

export interface ViewState {
  // Rendering: one frame at a time, following the stream while the user is at the bottom.
  frameRequested: boolean;
  stickToBottom: boolean;
  /** A prompt was sent and its answer's first text is not on screen yet (a bench figure). */
  awaitingFirstToken: boolean;
  /** The turn ended: report "idle" once everything pending is rendered (a bench figure). */
  turnEndedPendingIdle: boolean;

  // The transcript. `agents` holds "main" (created on first use) and the running subagents.
  agents: Map<string, AgentView>;
  tools: Map<string, ToolCard>;
  /** Inline requests (permission, question, plan) still waiting for an answer, by host id. */
  openRequests: Map<number, HTMLElement>;
  /** Prompts sent while idle whose `state:update processing` has not arrived yet. */
  expectTurnStart: number;

  // What the host told us.
  chat: ChatState;
  sessions: SessionListItem[];
  features: Features;
  models: ModelInfo[];
  sessionsOverlay: HTMLElement | undefined;

  // The composer.
  attachments: ImageAttachment[];
  /** The text a rewind or fork put in the input (a redo takes it back out, if unchanged). */
  restoredInput: string | undefined;
  inputHistory: string[];
  historyPos: number;
  /** The input as it was before browsing the history. */
  draft: string;
  completions: Completion[];
  selected: number;
  completionToken: CompletionToken | undefined;
  completeTimer: number | undefined;
}

export const view: ViewState = {
  frameRequested: false,
  stickToBottom: true,
  awaitingFirstToken: false,
  turnEndedPendingIdle: false,
  agents: new Map(),
  tools: new Map(),
  openRequests: new Map(),
  expectTurnStart: 0,
  chat: { busy: false, pending: 0, mode: "Agent", permissionMode: "default" },
  sessions: [],
  features: { models: false, messages: false, rewind: false, fork: false },
  models: [],
  sessionsOverlay: undefined,
  attachments: [],
  restoredInput: undefined,
  inputHistory: [],
  historyPos: -1,
  draft: "",
  completions: [],
  selected: 0,
  completionToken: undefined,
  completeTimer: undefined,
};
