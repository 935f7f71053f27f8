# The two set-up commands of the README:
#   make demo   installs everything, then decodes an SMS with the embedded state_union model
#   make test   installs everything, then runs the test suite
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install demo test lint bench

install:
	bash scripts/install.sh

demo: install
	$(VENV)/bin/arsdecode sms "3637 843 66639 39478 *"

test: install
	$(PY) -m pytest -q -p no:cacheprovider

lint:
	$(VENV)/bin/ruff check .

bench: install
	$(PY) bench/bench_maxarpa.py
	$(PY) bench/bench_ars.py
	$(PY) bench/bench_variants.py
