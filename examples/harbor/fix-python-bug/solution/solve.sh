#!/bin/bash
set -euo pipefail
cat > /app/stats.py <<'EOF'
def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return (ordered[mid - 1] + ordered[mid]) / 2
    return ordered[mid]
EOF
