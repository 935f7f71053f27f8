#!/usr/bin/env bash
# One-step set-up on a fresh Debian machine: system packages, a virtualenv in .venv, KenLM's
# Python module built with MAX_ORDER=10 (the default build caps n-gram order at 6 and pip
# caches that build, hence --no-cache-dir), lmplz/build_binary, and this project.
# Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"

need_apt=0
for f in /usr/include/boost/program_options.hpp /usr/include/boost/thread.hpp \
         /usr/include/zlib.h /usr/include/bzlib.h /usr/include/lzma.h; do
  [[ -e "$f" ]] || need_apt=1
done
if [[ $need_apt == 1 ]]; then
  echo "[install] Debian packages (boost, zlib, bzip2, xz headers)"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    build-essential cmake libboost-program-options-dev libboost-system-dev \
    libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev >/dev/null
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "[install] virtualenv $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
VPY="$VENV/bin/python"

if [[ ! -f "$VENV/.kenlm-max-order-10" ]]; then
  echo "[install] kenlm Python module with MAX_ORDER=10 (builds from source, ~1 min)"
  "$VPY" -m pip uninstall -y -q kenlm >/dev/null 2>&1 || true
  MAX_ORDER=10 "$VPY" -m pip install -q --no-cache-dir --no-binary kenlm "kenlm==0.3.0"
  touch "$VENV/.kenlm-max-order-10"
fi

echo "[install] lmplz and build_binary"
PYTHON="$VPY" bash data_prep/build_kenlm_tools.sh .tools

echo "[install] arsdecode + maxarpa"
"$VPY" -m pip install -q -e ".[dev]"
echo "[install] done"
