#!/bin/bash
set -euo pipefail
echo harbor > /app/word.txt
