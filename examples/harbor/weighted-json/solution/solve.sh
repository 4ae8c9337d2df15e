#!/bin/bash
set -euo pipefail
echo alpha > /app/a.txt
echo beta > /app/b.txt
