VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test warmup bench fuzz golden clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The app compiles what it lacks beside its window (app.preparation); the tests compile everything
# first, on every core (physics.warmup), instead of one kernel at a time inside the tests.
run: $(STAMP)
	$(PY) -m app $(ARGS)

warmup: $(STAMP)
	$(PY) -m physics warmup --if-needed

# one pytest worker per core (pytest-xdist), the display tests together on one of them
# (tests/conftest.py); PYTEST_ARGS="-n 0" runs everything in this process
test: warmup
	$(PY) -m pytest -n auto --dist loadgroup $(PYTEST_ARGS)

# The benchmarks measure peers side by side (pybullet, the `bench` extra).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m benchmarks $(ARGS)

fuzz: $(STAMP)
	$(PY) -m physics.fuzz --cases 10000 $(ARGS)

# Regenerate tests/golden_hashes.json after a deliberate change of arithmetic (say why in the commit).
golden: $(STAMP)
	$(PY) tests/test_determinism.py --regenerate

clean:
	rm -rf $(VENV) .pytest_cache
