#!/usr/bin/env bash
# Prepares a machine for the sandbox drivers: bubblewrap and a C compiler (for the bwrap driver's
# supervisor), Python 3 with venv (Python tools run in sandboxes from a venv of /usr/bin/python3),
# Docker Engine (without any bridge network: containers here only ever use NetworkMode "none"),
# debootstrap, and the sandbox images.
# Idempotent; CI runs it as root on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# Safety rule of this project: dockerd never creates the default bridge (172.17.x) nor touches
# iptables. This file must exist before dockerd first starts, and so before docker.io is installed
# (its postinst may start the daemon).
mkdir -p /etc/docker
want='{"bridge":"none","iptables":false,"ip-forward":false,"ip-masq":false}'
if [ "$(cat /etc/docker/daemon.json 2>/dev/null)" != "$want" ]; then
  if [ -S /var/run/docker.sock ] && pgrep -x dockerd >/dev/null; then
    echo "setup-sandbox: dockerd runs with another daemon.json; refusing to touch it" >&2
    exit 1
  fi
  printf '%s\n' "$want" > /etc/docker/daemon.json
fi

need_pkgs=()
command -v bwrap >/dev/null || need_pkgs+=(bubblewrap)
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v prlimit >/dev/null || need_pkgs+=(util-linux)
# The bwrap driver's supervisor (src/sandbox/drivers/bwrap/supervisor/*.c) is compiled on first use, statically.
command -v cc >/dev/null || need_pkgs+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib/aarch64-linux-gnu/libc.a ] || need_pkgs+=(libc6-dev)
# Python tools (init --example python) run from a venv of /usr/bin/python3 that the sandbox can see; a
# venv needs ensurepip (python3-venv on Debian).
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need_pkgs+=(python3 python3-venv)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}"
fi

# A dockerd that is not answering: if none is alive (zombies do not count), its pid file is stale
# and would stop the new one from starting.
live_dockerd() { ps -C dockerd -o stat= 2>/dev/null | grep -qv '^Z'; }
if ! { [ -S /var/run/docker.sock ] && docker version >/dev/null 2>&1; }; then
  if ! live_dockerd; then rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid; fi
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 100); do
    docker version >/dev/null 2>&1 && break
    sleep 0.2
  done
  docker version >/dev/null 2>&1 || { echo "setup-sandbox: dockerd did not start, see /var/log/dockerd.log" >&2; exit 1; }
fi
if docker network ls --format '{{.Driver}}' | grep -qx bridge; then
  echo "setup-sandbox: dockerd has a bridge network; it must run with /etc/docker/daemon.json as written above" >&2
  exit 1
fi

if ! docker image inspect rft-endpoints-sandbox:latest >/dev/null 2>&1; then
  bash docker/build-base-image.sh
fi
echo "setup-sandbox: bwrap $(bwrap --version | cut -d' ' -f2), docker $(docker version --format '{{.Server.Version}}'), image rft-endpoints-sandbox:latest"
