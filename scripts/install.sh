#!/usr/bin/env bash
# Set-up on a fresh Debian machine, in two sizes:
#   install.sh demo   a virtualenv in .venv with this project and only what decoding needs
#                     (numpy, pynini, networkx, tqdm, and the compiled part built by pip):
#                     no Boost, no KenLM (mostly download time; about 20 s of CPU).
#   install.sh test   (default) everything: the demo set-up, Debian build packages, KenLM's
#                     Python module built with MAX_ORDER=10 (the default build caps n-gram
#                     order at 6 and pip caches that build, hence --no-cache-dir), lmplz and
#                     build_binary, and the dev extras. The tests and data_prep need these.
# Idempotent: each step is skipped when already done (the project install is redone when
# pyproject.toml, setup.py or the compiled core's sources are newer than its stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-test}"
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
case "$MODE" in
  demo|test) ;;
  *) echo "usage: $0 [demo|test]" >&2; exit 2 ;;
esac

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "[install] virtualenv $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

# The sources of the project install, printed if any is newer than the stamp file $1: then
# the install (which builds the compiled core, ~60 s) is redone. Sources only: the
# __pycache__ that compileall writes below, and the build's .cpp and .so, are newer than the
# stamp after every run, and made every second `make demo` rebuild the core.
sources_newer_than() {
  find pyproject.toml setup.py arsdecode/native maxarpa/native -type f \
    \( -name '*.pyx' -o -name '*.pxi' -o -name '*.pxd' -o -name '*.hpp' -o -name '*.py' \
       -o -name pyproject.toml \) -newer "$1" -print 2>/dev/null
}

# The project (editable) with its runtime dependencies only; `test` adds the dev extras below.
# Editable mode "compat": a .pth line naming the checkout. The default (strict) mode installs
# setuptools' editable path finder, which every Python process of the venv then imports at
# start-up (with pathlib, fnmatch, importlib.util): about 10 ms of CPU on each CLI call, 10% of
# a one-lattice `arsdecode decode` (issue 34; bench/bench_startup.py, "dev" against
# "installed"). A user's wheel install has neither. A venv installed before keeps its finder
# until the next project install (when a source is newer than its stamp).
stamp="$VENV/.installed-demo"
if [[ ! -f "$stamp" || -n "$(sources_newer_than "$stamp")" ]]; then
  echo "[install] arsdecode + maxarpa (numpy, pynini, networkx, tqdm)"
  "$VPY" -m pip install -q -e . --config-settings editable_mode=compat
  touch "$stamp"
fi
# Bytecode for the project's own modules: an editable install leaves them as sources, and a
# shell with PYTHONDONTWRITEBYTECODE=1 (as on CI machines) would recompile every module on
# every CLI call (~0.1 s of a 0.5 s `arsdecode tag --file`). Cheap, and redone every time.
"$VPY" -m compileall -q arsdecode maxarpa data_prep >/dev/null
if [[ "$MODE" == demo ]]; then
  echo "[install] done (demo)"
  exit 0
fi

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

if [[ ! -f "$VENV/.kenlm-max-order-10" ]]; then
  echo "[install] kenlm Python module with MAX_ORDER=10 (builds from source, ~1 min)"
  "$VPY" -m pip uninstall -y -q kenlm >/dev/null 2>&1 || true
  MAX_ORDER=10 "$VPY" -m pip install -q --no-cache-dir --no-binary kenlm "kenlm==0.3.0"
  touch "$VENV/.kenlm-max-order-10"
fi

echo "[install] lmplz and build_binary"
PYTHON="$VPY" bash data_prep/build_kenlm_tools.sh .tools

stamp="$VENV/.installed-test"
if [[ ! -f "$stamp" || -n "$(sources_newer_than "$stamp")" ]]; then
  echo "[install] dev extras (pytest, hypothesis, scipy, ruff, matplotlib, nltk)"
  "$VPY" -m pip install -q -e ".[dev]" --config-settings editable_mode=compat
  touch "$stamp"
fi
echo "[install] done"
