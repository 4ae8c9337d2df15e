#!/usr/bin/env bash
# A Python venv with pyarrow and datasets, the loaders TRL, verl and OpenRLHF read their datasets with,
# for the test that reads `dataset convert`'s output back with them (test/cli/dataset/convert-trainers.test.ts).
# Uses pip's configured index. Idempotent. Prints the venv's python; CI exports it as RFT_TEST_PYTHON:
#   export RFT_TEST_PYTHON="$(bash .ci/setup-python.sh)"
set -euo pipefail

VENV="${RFT_PYTHON_VENV:-/opt/rft-python}"
PY="${RFT_PYTHON:-python3}"
PACKAGES=(pyarrow==25.0.1 datasets==5.0.1)

if "$VENV/bin/python" -c 'import pyarrow, datasets' >/dev/null 2>&1; then
  echo "$VENV/bin/python"
  exit 0
fi
if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  # Debian's python3 leaves venv's pip bootstrap to python3-venv.
  echo "setup-python: installing python3-venv" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
# The machine's own index first (pip's configured extra index) and retries off: pip's default index is
# unreachable here, and each retry of it waits (5 min with them on).
extra=$("$PY" -m pip config get global.extra-index-url 2>/dev/null || true)
if [ -n "$extra" ]; then export PIP_INDEX_URL="${extra%% *}"; fi
PIP_RETRIES=0 "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2
"$VENV/bin/python" -c 'import pyarrow, datasets' >&2
echo "$VENV/bin/python"
