"""The page's inline stylesheet and script (the script is allowed by its hash in the page's CSP)."""

from __future__ import annotations

CSS = """
:root{--fg:#1f2328;--muted:#656d76;--bg:#fff;--card:#f6f8fa;--line:#d0d7de;--accent:#0969da;
--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--think:#8250df}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#8d96a0;--bg:#0d1117;--card:#161b22;
--line:#30363d;--accent:#4493f8;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--think:#a371f7}}
*{box-sizing:border-box}
body{margin:0;padding:16px 24px;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:18px;margin:0 0 8px}h2{font-size:16px;margin:24px 0 8px}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.tools{margin:8px 0}.tools button{font:inherit;padding:2px 8px;margin-right:6px}
.timeline{list-style:none;margin:0;padding:0}
.item{display:grid;grid-template-columns:90px 1fr;gap:8px;padding:6px 0;border-top:1px solid var(--line)}
.item .when{color:var(--muted);font:12px ui-monospace,monospace;padding-top:2px;white-space:nowrap}
.item.sub .body{margin-left:24px;border-left:3px solid var(--line);padding-left:8px}
.label{display:inline-block;font-size:12px;font-weight:600;padding:0 6px;border-radius:4px;
background:var(--card);border:1px solid var(--line);margin-right:6px}
.prompt .label{color:var(--accent)}.answer .label{color:var(--ok)}.tool .label{color:var(--warn)}
.error .label,.bad{color:var(--bad)}.good{color:var(--ok)}
.mode .label,.model .label,.rewind .label,.compact .label{color:var(--think)}
.meta{color:var(--muted);font-size:12px;margin-left:6px}
pre{margin:4px 0;padding:6px 8px;background:var(--card);border:1px solid var(--line);border-radius:4px;
white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.4 ui-monospace,monospace;max-height:480px;overflow:auto}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
details>summary{cursor:pointer;color:var(--muted)}
details.thinking>summary{color:var(--think)}
.perm{margin:4px 0;padding:4px 8px;border-left:3px solid var(--warn);background:var(--card)}
.chart svg{width:100%;max-width:760px;height:auto;border:1px solid var(--line);border-radius:4px}
.chart .ctx{stroke:var(--accent)}.chart .cost{stroke:var(--ok)}
.chart text{fill:var(--muted);font:11px system-ui,sans-serif}
.legend span{margin-right:12px}.sw{display:inline-block;width:10px;height:3px;vertical-align:middle;margin-right:4px}
footer{margin-top:24px;color:var(--muted);font-size:12px}
"""

JS = """
for (const b of document.querySelectorAll('button[data-open]')) {
  b.addEventListener('click', () => {
    const open = b.dataset.open === '1';
    for (const d of document.querySelectorAll('main details')) d.open = open;
  });
}
"""
