// The chat's optional features and its model picker (`model/list`, `session/setModel`).
import type { ChatSession, ModelInfo, SemaConnection } from "./client";
import type { Features, ToWebview } from "./messages";

/**
 * Optional features, offered only when `initialize` lists their methods (a newer client
 * on an older server keeps working without them).
 */
export function chatFeatures(conn: SemaConnection): Features {
  return {
    models: conn.supports("model/list") && conn.supports("session/setModel"),
    messages: conn.supports("session/messages"),
    rewind: conn.supports("session/rewind"),
    fork: conn.supports("session/fork"),
  };
}

export class ChatModels {
  /** `model/list`'s answer (empty when the server has no such method). */
  private models: ModelInfo[] = [];

  /** `post` sends to the webview; `changed` re-sends the chat's state (its model may have changed). */
  constructor(
    private readonly post: (msg: ToWebview) => void,
    private readonly changed: () => void,
  ) {}

  /** The features of `conn` to the webview, then its models (`session`: the chat's, if on `conn`). */
  offer(conn: SemaConnection, session: ChatSession | undefined): void {
    const features = chatFeatures(conn);
    this.post({ type: "features", features, models: this.models });
    void this.refresh(conn, session, features);
  }

  /** `model/list` for the picker; with the chat's session, its `current` names the session's model. */
  async refresh(conn: SemaConnection, session: ChatSession | undefined, features = chatFeatures(conn)): Promise<void> {
    if (!features.models) return;
    const own = session?.connection === conn ? session : undefined;
    try {
      const { models, current } = await conn.listModels(own?.id);
      this.models = models;
      if (own && current) own.modelName = current;
      this.post({ type: "features", features, models });
      this.changed();
    } catch (err) {
      this.post({ type: "error", message: `model/list failed: ${err instanceof Error ? err.message : String(err)}` });
    }
  }

  /**
   * Why images cannot go with a prompt to `session`'s model: it is a listed profile that does
   * not read them (the server would refuse too). A model the list does not know is left for
   * the server to decide (undefined).
   */
  imagesRefused(session: ChatSession | undefined): string | undefined {
    const name = session?.model;
    const model = name ? this.models.find((m) => m.name === name) : undefined;
    if (!model || model.images) return undefined;
    return `${model.name} does not take images: pick a model that does (the picker marks them), or send text only.`;
  }
}
