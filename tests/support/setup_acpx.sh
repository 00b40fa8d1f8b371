#!/usr/bin/env bash
# The npm `acpx` CLI (a headless ACP client) and the Node it needs (>= 22, from the npm
# `node` package), installed into a cache outside the repository; prints the folder
# whose `bin/` holds `acpx` and `node`. Exit 3: npm is not there to install them.
set -euo pipefail
ACPX_VERSION=0.19.1
NODE_VERSION=24.21.0
CACHE=${SEMA_ACPX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sema-acpx}
command -v npm >/dev/null || { echo "setup-acpx: npm is missing" >&2; exit 3; }
stamp="$CACHE/.done-$ACPX_VERSION-$NODE_VERSION"
if [ ! -f "$stamp" ]; then
  echo "setup-acpx: acpx $ACPX_VERSION, node $NODE_VERSION (npm) -> $CACHE" >&2
  rm -rf "$CACHE" && mkdir -p "$CACHE"
  echo '{"name":"sema-acpx","version":"1.0.0","private":true}' > "$CACHE/package.json"
  (cd "$CACHE" && npm install --no-save -q "node@$NODE_VERSION" "acpx@$ACPX_VERSION" >&2)
  mkdir -p "$CACHE/bin"
  ln -sf "$CACHE/node_modules/node/bin/node" "$CACHE/bin/node"
  ln -sf "$CACHE/node_modules/.bin/acpx" "$CACHE/bin/acpx"
  "$CACHE/bin/node" -v >&2
  touch "$stamp"
fi
echo "$CACHE"
