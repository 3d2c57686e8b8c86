#!/usr/bin/env bash
# Node 24 LTS from the npm registry, for a machine whose own Node is older (CI, and these dev
# machines run Node 20). Node's own builds are published as `node-linux-<arch>`: the package holds
# `bin/node` and the headers (`include/node`), so native modules (better-sqlite3) build against it
# without downloading anything. The machine's own `node` is left alone.
#
# Source it:   source scripts/node24.sh      (puts Node 24 first on PATH, points npm_config_nodedir
#                                             at its headers; installs it into .toolchain/ once)
# Or run it:   bash scripts/node24.sh path   (prints the folder whose bin/ holds node)
#
# PLUGBOARD_NODE_VERSION overrides the version (default below: the LTS line's release this was
# last checked with). A machine already on Node >= 24 is used as it is.

_pb_node_version="${PLUGBOARD_NODE_VERSION:-24.21.0}"
_pb_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_pb_dir="$_pb_root/.toolchain/node-$_pb_node_version"

_pb_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [[ "${PLUGBOARD_NODE_VERSION:-}" == "" && "$(_pb_node_major)" -ge 24 && ! -x "$_pb_dir/bin/node" ]]; then
  _pb_dir="$(dirname "$(dirname "$(command -v node)")")"
else
  if [[ ! -x "$_pb_dir/bin/node" ]]; then
    case "$(uname -m)" in
      x86_64) _pb_arch=x64 ;;
      aarch64 | arm64) _pb_arch=arm64 ;;
      *) echo "[node24] no node-linux build for $(uname -m)" >&2; return 1 2>/dev/null || exit 1 ;;
    esac
    echo "[node24] installing node-linux-$_pb_arch@$_pb_node_version into .toolchain/" >&2
    _pb_tmp="$(mktemp -d)"
    (cd "$_pb_tmp" && npm pack --silent "node-linux-$_pb_arch@$_pb_node_version" >/dev/null) &&
      mkdir -p "$_pb_dir" &&
      tar xzf "$_pb_tmp"/node-linux-*.tgz -C "$_pb_dir" --strip-components=1
    _pb_status=$?
    rm -rf "$_pb_tmp"
    if [[ $_pb_status -ne 0 || ! -x "$_pb_dir/bin/node" ]]; then
      echo "[node24] could not install node-linux-$_pb_arch@$_pb_node_version" >&2
      rm -rf "$_pb_dir"
      return 1 2>/dev/null || exit 1
    fi
  fi
fi

if [[ "${1:-}" == "path" ]]; then
  echo "$_pb_dir"
else
  export PATH="$_pb_dir/bin:$PATH"
  # Native builds (better-sqlite3) compile against these headers instead of downloading them.
  if [[ -d "$_pb_dir/include/node" ]]; then export npm_config_nodedir="$_pb_dir"; fi
fi
unset _pb_node_version _pb_root _pb_dir _pb_arch _pb_tmp _pb_status
unset -f _pb_node_major
