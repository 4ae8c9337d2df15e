#!/bin/bash
mkdir -p /logs/verifier
if [ -f /app/marker ] && [ "$(cat /app/out/result.txt 2>/dev/null)" = "legacy ok" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
