#!/bin/bash
set -euo pipefail
uname -s > /tmp/done.txt
