#!/bin/bash
# Runs in the task's workdir (/srv/project), as the agent did: relative paths on purpose.
mkdir -p /logs/verifier
v=0; c=0
[ "$(cat VERSION 2>/dev/null)" = "1.3.0" ] && v=1
[ "$(head -n1 CHANGELOG.md 2>/dev/null)" = "## 1.3.0" ] && grep -qx '## 1.2.3' CHANGELOG.md && c=1
echo "{\"reward\": $(( v * c )), \"version\": $v, \"changelog\": $c}" > /logs/verifier/reward.json
