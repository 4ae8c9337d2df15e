#!/bin/bash
mkdir -p /logs/verifier
cfg=/app/config.ini
check() { grep -qx "$1" "$cfg" 2>/dev/null && echo 1 || echo 0; }
port=$(check "port=${EXPECTED_PORT:-8080}")
mode=$(check "mode=production")
name=$(check "name=demo")
awk -v p="$port" -v m="$mode" -v n="$name" 'BEGIN {
  printf "{\"reward\": %.4f, \"port\": %d, \"mode\": %d, \"name_kept\": %d}\n", (p+m+n)/3, p, m, n
}' > /logs/verifier/reward.json
cat /logs/verifier/reward.json
