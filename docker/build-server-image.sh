#!/usr/bin/env bash
# Builds the server image, rft-endpoints:latest, from the top-level Dockerfile on a machine that
# reaches no container registry: the official node:20-slim base is replaced by one made here
# (rft-endpoints-node:20, the debootstrap'ed Debian base plus this machine's Node, see
# node-base.Dockerfile), and the build stage by rft-endpoints-node-build:20 (plus npm, Node's headers
# and a C++ toolchain). With a registry, plain `docker build -t rft-endpoints .` does the same.
# Each image is built once: a rerun with nothing changed takes seconds (Docker's layer cache).
# Env: RFT_NODE (the node binary to copy, default the one on PATH; must be 20.18 or later).
set -euo pipefail
cd "$(dirname "$0")"

docker image inspect rft-endpoints-base:bookworm >/dev/null 2>&1 || bash build-base-image.sh

node_bin=$(readlink -f "${RFT_NODE:-$(command -v node)}")
version=$("$node_bin" -p 'process.versions.node')
if ! "$node_bin" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)'; then
  echo "build-server-image: $node_bin is Node $version; the server needs 20.18 or later (set RFT_NODE)" >&2
  exit 1
fi
node_home=$(dirname "$(dirname "$node_bin")")
npm_dir=$(npm root -g)/npm
headers=$node_home/include/node
for need in "$npm_dir/bin/npm-cli.js" "$headers/node.h"; do
  [ -e "$need" ] || { echo "build-server-image: $need not found (npm and Node's headers come with Node's own packages)" >&2; exit 1; }
done

# The local bases are rebuilt only when the Node they hold changes.
if [ "$(docker image inspect -f '{{index .Config.Labels "rft-endpoints.node"}}' rft-endpoints-node-build:20 2>/dev/null)" != "$version" ] \
  || ! docker image inspect rft-endpoints-node:20 >/dev/null 2>&1; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cp "$node_bin" "$ctx/node"
  cp -a "$npm_dir" "$ctx/npm"
  cp -a "$headers" "$ctx/include"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  docker build -q --network host --label "rft-endpoints.node=$version" --target runtime -t rft-endpoints-node:20 -f node-base.Dockerfile "$ctx"
  docker build -q --network host --label "rft-endpoints.node=$version" --target build -t rft-endpoints-node-build:20 -f node-base.Dockerfile "$ctx"
fi

docker build --network host \
  --build-arg NODE_IMAGE=rft-endpoints-node:20 \
  --build-arg BUILD_IMAGE=rft-endpoints-node-build:20 \
  -t rft-endpoints:latest ..
echo "build-server-image: rft-endpoints:latest ($(docker image inspect -f '{{.Size}}' rft-endpoints:latest | awk '{printf "%.0f MB", $1/1e6}'), Node $version)"
