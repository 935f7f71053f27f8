#!/usr/bin/env bash
# Build KenLM's lmplz and build_binary (order up to 10) from the PyPI kenlm sdist.
# Why: tests and data_prep train real ARPA models, and PyPI ships no binaries.
# Usage: data_prep/build_kenlm_tools.sh [PREFIX]   (default PREFIX: ./.tools)
# Needs cmake, g++ and Debian's libboost-{program-options,system,thread,test}-dev,
# zlib1g-dev, libbz2-dev, liblzma-dev.
set -euo pipefail
PREFIX="$(realpath -m "${1:-.tools}")"
PY="${PYTHON:-python3}"
if [[ -x "$PREFIX/bin/lmplz" && -x "$PREFIX/bin/build_binary" ]]; then
  echo "kenlm tools already in $PREFIX/bin"; exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PY" -m pip download -q --no-deps --no-binary kenlm --dest "$WORK" "kenlm==0.3.0"
tar -xzf "$WORK"/kenlm-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/kenlm-*/)"
mkdir -p "$WORK/build" "$PREFIX/bin"
cmake -S "$SRC" -B "$WORK/build" -DKENLM_MAX_ORDER=10 -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 \
  || { cat "$WORK/cmake.log"; exit 1; }
cmake --build "$WORK/build" --target lmplz build_binary -- -j"$(nproc)" >"$WORK/build.log" 2>&1 \
  || { tail -50 "$WORK/build.log"; exit 1; }
cp "$WORK/build/bin/lmplz" "$WORK/build/bin/build_binary" "$PREFIX/bin/"
echo "built lmplz and build_binary into $PREFIX/bin"
