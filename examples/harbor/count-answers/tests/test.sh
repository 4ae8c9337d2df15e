#!/bin/bash
mkdir -p /logs/verifier
total=$(wc -l < /tests/expected.txt)
correct=0
if [ -f /app/answers.txt ]; then
  correct=$(paste -d' ' /tests/expected.txt /app/answers.txt \
    | awk '{ if ($1 == $2) n++ } END { print n + 0 }')
fi
echo "correct=$correct total=$total"
awk -v c="$correct" -v t="$total" 'BEGIN { printf "%.4f\n", c / t }' > /logs/verifier/reward.txt
