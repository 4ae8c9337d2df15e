#!/usr/bin/env bash
# Builds the sandbox image with no container registry: a minimal Debian bookworm root made by
# debootstrap from the Debian mirror apt already uses, imported as rft-endpoints-base:bookworm, then
# docker/sandbox.Dockerfile on top. The debootstrap tree is cached, so reruns take seconds.
set -euo pipefail
cd "$(dirname "$0")"

CACHE=${RFT_ROOTFS_CACHE:-/var/cache/rft-endpoints/bookworm-minbase}
MIRROR=${RFT_DEBIAN_MIRROR:-}
if [ -z "$MIRROR" ]; then
  # The first Debian URI apt is configured with (deb822 .sources or one-line .list).
  MIRROR=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ' || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi

if [ ! -f "$CACHE/.complete" ]; then
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase --include=python3,nodejs bookworm "$CACHE" "$MIRROR"
  # Apt caches and lists are useless in a sandbox and only make the image bigger.
  rm -rf "$CACHE"/var/cache/apt/archives/*.deb "$CACHE"/var/lib/apt/lists/*
  touch "$CACHE/.complete"
fi

if ! docker image inspect rft-endpoints-base:bookworm >/dev/null 2>&1; then
  tar -C "$CACHE" --exclude=./.complete -c . | docker import - rft-endpoints-base:bookworm
fi
docker build --network none -f sandbox.Dockerfile -t rft-endpoints-sandbox:latest .
