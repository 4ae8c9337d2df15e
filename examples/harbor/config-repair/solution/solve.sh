#!/bin/bash
set -euo pipefail
sed -i -e 's/^port=.*/port=8080/' -e 's/^mode=.*/mode=production/' /app/config.ini
