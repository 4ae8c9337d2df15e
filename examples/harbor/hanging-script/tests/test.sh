#!/bin/bash
# No timeout of its own: an unfixed script runs until the verifier's limit ends the step.
mkdir -p /logs/verifier
if [ "$(bash /app/count.sh | tr '\n' ' ')" = "1 2 3 4 5 " ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
