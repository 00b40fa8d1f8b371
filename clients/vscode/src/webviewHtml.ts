// The chat webview's document: its script and style only, under a strict CSP.

/** A fresh nonce: the only script the document may run is the one carrying it. */
export function nonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

/**
 * The HTML of the chat view. `cspSource` is the webview's own origin (`webview.cspSource`),
 * `script` and `style` the webview URIs of the bundled files: nothing else loads, no inline
 * style or script runs, images only from the extension or `data:`.
 */
export function webviewHtml(cspSource: string, script: string, style: string, n: string = nonce()): string {
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${n}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet"><title>Sema</title></head>
<body><div id="app"></div><script nonce="${n}" src="${script}"></script></body></html>`;
}
