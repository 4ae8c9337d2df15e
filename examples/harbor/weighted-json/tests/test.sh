#!/bin/bash
mkdir -p /logs/verifier
a=0; b=0
[ "$(cat /app/a.txt 2>/dev/null)" = "alpha" ] && a=1
[ "$(cat /app/b.txt 2>/dev/null)" = "beta" ] && b=1
awk -v a="$a" -v b="$b" 'BEGIN { printf "{\"reward\": %.2f, \"a\": %d, \"b\": %d}\n", 0.8 * a + 0.2 * b, a, b }' > /logs/verifier/reward.json
