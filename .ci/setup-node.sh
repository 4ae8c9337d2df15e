#!/usr/bin/env bash
# Installs the Node LTS the project runs on (24) beside the machine's own Node, from the npm registry
# (the package node-linux-<arch> holds Node's bin/ and include/, the headers native addons are compiled
# against; not npm: the machine's npm runs on whichever node is first on PATH). No other network is
# needed. Idempotent. Prints the folder; put its bin/ first on PATH and set npm_config_nodedir to it
# (better-sqlite3 is compiled against its headers).
set -euo pipefail

NODE_MAJOR="${RFT_NODE_MAJOR:-24}"
PREFIX="${RFT_NODE_PREFIX:-/opt/node-v$NODE_MAJOR}"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "setup-node: no Node package for $(uname -m)" >&2; exit 1 ;;
esac

if [ -x "$PREFIX/bin/node" ] && [ "$("$PREFIX/bin/node" -p 'process.versions.node.split(".")[0]')" = "$NODE_MAJOR" ]; then
  echo "$PREFIX"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-$arch@$NODE_MAJOR" >/dev/null)
mkdir -p "$tmp/x"
tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$tmp/x"
for need in bin/node include/node/node.h; do
  [ -e "$tmp/x/package/$need" ] || { echo "setup-node: the package has no $need" >&2; exit 1; }
done
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$tmp/x/package" "$PREFIX"
echo "setup-node: Node $("$PREFIX/bin/node" --version) in $PREFIX" >&2
echo "$PREFIX"
