#!/bin/bash
set -euo pipefail
printf 'hello harbor\n' > /app/greeting.txt
