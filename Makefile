# syncbed: the two commands of the README, and a few more. Every target installs
# what is missing first (scripts/setup.sh is idempotent and fast when all is there).
PY := .venv/bin/python
EXPERIMENT ?= experiments/default.yaml

.PHONY: setup run test test-fast bench clean

setup:
	bash scripts/setup.sh

run: setup  ## the default experiment, end to end, with its report
	$(PY) -m emulation.cli run $(EXPERIMENT)

test: setup  ## every tier: unit, parallel (localhost Gloo), emulation (root)
	@# undo a run killed before this session (its record in /run/syncbed); the tests then
	@# check that the machine is clean before and after each emulation
	$(PY) -m emulation.cli clean
	$(PY) -m pytest -ra tests

test-fast: setup  ## unit + parallel only (no root needed)
	$(PY) -m pytest -ra -m "unit or parallel" tests

bench: setup  ## the benchmarks of the closing notes (not timed tests)
	$(PY) -m emulation.cli bench pcap
	$(PY) -m emulation.cli run experiments/default.yaml

clean:
	$(PY) -m emulation.cli clean
