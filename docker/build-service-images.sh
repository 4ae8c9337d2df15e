#!/usr/bin/env bash
# Builds the local stand-ins for the official postgres, redis and caddy images from Debian's packages
# (services/services.Dockerfile): rft-endpoints-postgres:local, rft-endpoints-redis:local,
# rft-endpoints-caddy:local. The tests' testcontainers and the local compose stack use them; with a
# registry, compose.yaml uses the official images instead. Each is built once (layer cache).
set -euo pipefail
cd "$(dirname "$0")"

docker image inspect rft-endpoints-base:bookworm >/dev/null 2>&1 || bash build-base-image.sh
for target in postgres redis caddy; do
  docker build -q --network host --target "$target" -t "rft-endpoints-$target:local" -f services/services.Dockerfile services >/dev/null
done
echo "build-service-images: rft-endpoints-postgres:local, rft-endpoints-redis:local, rft-endpoints-caddy:local"
