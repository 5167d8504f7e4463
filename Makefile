VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Every installed version is pinned (pip constraints): the golden hashes depend on numpy, numba and
# llvmlite, and a new release of one must not change CI's bits on the day it appears.
LOCK := requirements.lock

.PHONY: run test long warmup bench fuzz golden lock clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# The app compiles what it lacks beside its window (app.preparation); the tests compile everything
# first, on every core (physics.tools.warmup), instead of one kernel at a time inside the tests.
run: $(STAMP)
	$(PY) -m app $(ARGS)

warmup: $(STAMP)
	$(PY) -m physics warmup --if-needed

# one pytest worker per core (pytest-xdist), the display tests together on one of them
# (tests/conftest.py); PYTEST_ARGS="-n 0" runs everything in this process. The slowest tests are
# listed at the end (what a faster suite shortens next: the README's test-time paragraph). A worker
# that dies is not replaced: the run fails at once and names the test it was running (replaced,
# a lost worker's group of tests could leave the scheduler waiting on it for good).
test: warmup
	$(PY) -m pytest -n auto --dist loadgroup --max-worker-restart=0 -m "not long" --durations=15 --durations-min=5 $(PYTEST_ARGS)

# the runs too long for `make test`, each beside its bounded version there (pytest marker `long`)
long: warmup
	$(PY) -m pytest -n auto --dist loadgroup -m long $(PYTEST_ARGS)

# The benchmarks measure peers side by side (pybullet, the `bench` extra).
bench: $(STAMP)
	$(PY) -m pip install --quiet -c $(LOCK) -e '.[dev,bench]'
	$(PY) -m benchmarks $(ARGS)

fuzz: $(STAMP)
	$(PY) -m physics.tools.fuzz --cases 10000 $(ARGS)
	$(PY) -m app.settings_fuzz --cases 10000

# Regenerate tests/golden_hashes.json after a deliberate change of arithmetic (say why in the commit).
golden: $(STAMP)
	$(PY) tests/test_determinism.py --regenerate

# Re-pin every dependency to what the venv holds now (after a deliberate upgrade; run the golden
# hashes before committing the new lock).
lock: $(STAMP)
	$(PY) -m pip freeze --exclude-editable | grep -v '^pip==' > $(LOCK).tmp && mv $(LOCK).tmp $(LOCK)

clean:
	rm -rf $(VENV) .pytest_cache
