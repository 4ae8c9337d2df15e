#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /tmp/done.txt 2>/dev/null)" = "$(uname -s)" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
