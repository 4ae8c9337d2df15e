#!/bin/bash
set -euo pipefail
echo 1.3.0 > VERSION
{ echo '## 1.3.0'; cat CHANGELOG.md; } > CHANGELOG.new && mv CHANGELOG.new CHANGELOG.md
