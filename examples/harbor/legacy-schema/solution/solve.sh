#!/bin/bash
set -euo pipefail
touch /app/marker
mkdir -p /app/out
echo 'legacy ok' > /app/out/result.txt
