#!/usr/bin/env bash
# Builds the server image, rft-endpoints:latest, from the top-level Dockerfile on a machine that
# reaches no container registry: the official node:24-slim base is replaced by one made here
# (rft-endpoints-node:<major>, the debootstrap'ed Debian base plus a Node of this machine, see
# node-base.Dockerfile), and the build stage by rft-endpoints-node-build:<major> (plus npm, Node's
# headers and a C++ toolchain). With a registry, plain `docker build -t rft-endpoints .` does the same.
# Each image is built once: a rerun with nothing changed takes seconds (Docker's layer cache).
# Env: RFT_NODE (the node binary to copy: default Node 24 from .ci/setup-node.sh when installed, else
# the one on PATH; must be 22 or later, the oldest Node the dependencies support).
set -euo pipefail
cd "$(dirname "$0")"

docker image inspect rft-endpoints-base:bookworm >/dev/null 2>&1 || bash build-base-image.sh

default_node=$(command -v node)
[ -x /opt/node-v24/bin/node ] && default_node=/opt/node-v24/bin/node
node_bin=$(readlink -f "${RFT_NODE:-$default_node}")
version=$("$node_bin" -p 'process.versions.node')
major=${version%%.*}
if [ "$major" -lt 22 ]; then
  echo "build-server-image: $node_bin is Node $version; the server needs 22 or later (set RFT_NODE, or run .ci/setup-node.sh)" >&2
  exit 1
fi
node_home=$(dirname "$(dirname "$node_bin")")
# npm's own folder, from the npm on PATH (not `npm root -g`: with Node 24 first on PATH that names Node 24's
# prefix, which holds no npm: .ci/setup-node.sh installs Node alone).
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
headers=$node_home/include/node
for need in "$npm_dir/bin/npm-cli.js" "$headers/node.h"; do
  [ -e "$need" ] || { echo "build-server-image: $need not found (npm and Node's headers come with Node's own packages)" >&2; exit 1; }
done

# The local bases are rebuilt only when the Node they hold changes.
if [ "$(docker image inspect -f '{{index .Config.Labels "rft-endpoints.node"}}' rft-endpoints-node-build:$major 2>/dev/null)" != "$version" ] \
  || ! docker image inspect rft-endpoints-node:$major >/dev/null 2>&1; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cp "$node_bin" "$ctx/node"
  cp -a "$npm_dir" "$ctx/npm"
  cp -a "$headers" "$ctx/include"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  docker build -q --network host --label "rft-endpoints.node=$version" --target runtime -t rft-endpoints-node:$major -f node-base.Dockerfile "$ctx"
  docker build -q --network host --label "rft-endpoints.node=$version" --target build -t rft-endpoints-node-build:$major -f node-base.Dockerfile "$ctx"
fi

docker build --network host \
  --build-arg NODE_IMAGE=rft-endpoints-node:$major \
  --build-arg BUILD_IMAGE=rft-endpoints-node-build:$major \
  -t rft-endpoints:latest ..
echo "build-server-image: rft-endpoints:latest ($(docker image inspect -f '{{.Size}}' rft-endpoints:latest | awk '{printf "%.0f MB", $1/1e6}'), Node $version)"
