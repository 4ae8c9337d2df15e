#!/bin/bash
mkdir -p /logs/verifier
python3 /tests/check.py
cat /logs/verifier/reward.json
