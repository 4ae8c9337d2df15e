#!/bin/bash
set -euo pipefail
printf '5\n42\n6\n3\n' > /app/answers.txt
