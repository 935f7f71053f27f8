# The set-up commands of the README:
#   make demo   installs only what decoding needs (no KenLM), then decodes an SMS with the
#               embedded state_union model, tags a sentence with the shipped EWT tagger and
#               segments a hashtag
#   make test   installs everything (KenLM module, lmplz), then runs the test suite
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install install-demo demo test lint bench wheel

install:
	bash scripts/install.sh test

install-demo:
	bash scripts/install.sh demo

demo: install-demo
	$(VENV)/bin/arsdecode sms "3637 843 66639 39478 *"
	$(VENV)/bin/arsdecode tag "The dog barked ."
	$(VENV)/bin/arsdecode segment "#StateOfTheUnion"

test: install
	$(PY) -m pytest -q -p no:cacheprovider

lint:
	$(VENV)/bin/ruff check .

bench: install
	$(PY) -m bench.bench_maxarpa
	$(PY) -m bench.bench_ars
	$(PY) -m bench.bench_variants

wheel: install
	$(PY) -m pip install -q build
	$(PY) -m build --outdir dist .
