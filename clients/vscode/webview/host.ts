// The webview's one channel to the extension host: everything it sends is a `FromWebview`.
import type { FromWebview } from "../src/messages";

declare function acquireVsCodeApi(): { postMessage(msg: FromWebview): void };
// The API can be acquired once per page: this module holds it.
const vscode = acquireVsCodeApi();

export function send(msg: FromWebview): void {
  vscode.postMessage(msg);
}
