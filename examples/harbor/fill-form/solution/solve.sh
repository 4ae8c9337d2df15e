#!/bin/bash
set -euo pipefail
printf 'name=Ada Lovelace\nyear=1843\nlanguage=English\npages=65\ntopic=analytical engine\n' > /app/form.txt
