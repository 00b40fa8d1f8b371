#!/usr/bin/env bash
# Install what the real-VS-Code end-to-end test needs, outside the repository:
#   chromium (apt, needs root), Node 24 and code-server (npm), into a cache folder
#   that survives between runs: ${SEMA_VSCODE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sema-vscode-e2e}.
# Exit 0: ready (prints the cache dir on the last line). Exit 3: cannot be installed here
# (no root for apt-get, no apt-get): the caller reports the test as SKIPPED. Other: a failure.
set -euo pipefail

NODE24_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
CACHE=${SEMA_VSCODE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sema-vscode-e2e}
export npm_config_nodedir=/usr   # node-gyp uses the system headers, never downloads them
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

skip() { echo "setup-e2e: CANNOT INSTALL: $*" >&2; exit 3; }

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium fonts-liberation)
[ -f /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)   # code-server's kerberos addon compiles against it
if [ ${#need_apt[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "no apt-get to install ${need_apt[*]}"
  [ "$(id -u)" = 0 ] || skip "installing ${need_apt[*]} needs root (apt-get); run this script as root once"
  echo "setup-e2e: apt-get install ${need_apt[*]}" >&2
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_apt[@]}" >&2
fi
[ -f /usr/include/node/node_api.h ] || skip "no Node headers in /usr/include/node (node-gyp would download them)"

mkdir -p "$CACHE"
NODE24=$CACHE/node24/node_modules/node/bin
if [ ! -f "$CACHE/node24/.done-$NODE24_VERSION" ]; then
  echo "setup-e2e: Node $NODE24_VERSION (npm) -> $CACHE/node24" >&2
  rm -rf "$CACHE/node24" && mkdir -p "$CACHE/node24"
  echo '{"name":"node24","version":"1.0.0","private":true}' > "$CACHE/node24/package.json"
  (cd "$CACHE/node24" && npm install --no-save -q "node@$NODE24_VERSION" >&2)
  "$NODE24/node" -v >&2
  touch "$CACHE/node24/.done-$NODE24_VERSION"
fi

if [ ! -f "$CACHE/cs/.done-$CODE_SERVER_VERSION" ]; then
  echo "setup-e2e: code-server $CODE_SERVER_VERSION (npm, compiles native addons, ~2 min) -> $CACHE/cs" >&2
  rm -rf "$CACHE/cs" && mkdir -p "$CACHE/cs"
  echo '{"name":"cs","version":"1.0.0","private":true}' > "$CACHE/cs/package.json"
  (cd "$CACHE/cs" && PATH=$NODE24:$PATH npm install --no-save -q "code-server@$CODE_SERVER_VERSION" >&2)
  touch "$CACHE/cs/.done-$CODE_SERVER_VERSION"
fi
echo "$CACHE"
