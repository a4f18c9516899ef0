# The README's two commands: `make run` (set up, then start the main job) and `make test` (set up, then
# every check CI runs). Everything the project needs is installed from here, into .venv.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
# Playing needs the package alone; the checks need the test tooling and every extra (a much larger install).
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean browser prometheus

$(RUN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(RUN_STAMP)

# `make run PORT=8001` for another port; a busy one is refused with one line naming it, before anything starts.
# Both engines are compiled once on a machine, before the server opens, with a progress line (oncallsim prepare).
run: $(RUN_STAMP)
	@$(BIN)/python -m oncallsim.web.ports $(PORT)
	$(BIN)/oncallsim prepare
	$(BIN)/oncallsim serve --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check oncallsim tests benchmarks scripts examples
	$(BIN)/ruff format --check oncallsim tests benchmarks scripts examples
	$(BIN)/mypy oncallsim

# The browser tests drive Debian's chromium (no browser download). Installed here when missing and root.
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else echo "chromium missing: run 'apt-get install chromium' as root for the browser tests"; fi
	@# Armenian and Arabic need a packaged font that has them (DejaVu Sans does); never a web font from outside.
	@if command -v fc-list >/dev/null && { [ -z "$$(fc-list :lang=hy)" ] || [ -z "$$(fc-list :lang=ar)" ]; }; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-dejavu-core >/dev/null; \
		else echo "no font for Armenian or Arabic: run 'apt-get install fonts-dejavu-core' as root"; fi; \
	fi

# The alert tests run Debian's Prometheus: promtool (rule checks, rule unit tests, backfills) and the server.
# Installed here when missing and root, as the browser is.
prometheus:
	@if command -v promtool >/dev/null && command -v prometheus >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	else echo "prometheus missing: run 'apt-get install prometheus' as root for the alert tests"; fi

# pytest's exit code 5 ("no tests collected") is a failure here, never a silent pass.
# Two parts at once: the checks that only compute, spread over every core (pytest-xdist; the slowest are stolen by
# an idle worker) at the lowest CPU priority (nice 19), and beside them those paced by the wall clock (browsers at
# 16×, latency bounds: marked `serial`) one at a time at normal priority: the scheduler gives the paced ones a core
# the moment they want it, so another test's CPU never decides whether a click lands in time, and the computing
# part uses what they leave idle. The computing part's output is kept in .pytest-computing.log and shown when both
# are done. Either part failing fails the target. `make test SERIAL=after` runs them one after the other.
TEST_WORKERS ?= auto
SERIAL ?= beside
COMPUTING_LOG := .pytest-computing.log
test: lint browser prometheus
	@computing="-n $(TEST_WORKERS) --dist worksteal -m 'not serial'"; \
	verdict() { if [ $$2 -eq 5 ]; then echo "pytest collected no tests ($$1): failing"; return 1; fi; return $$2; }; \
	if [ "$(SERIAL)" = after ]; then \
		echo "pytest $$computing"; eval $(BIN)/pytest $$computing; verdict computing $$? || exit 1; \
		echo "pytest -m serial"; $(BIN)/pytest -m serial; verdict serial $$? || exit 1; exit 0; \
	fi; \
	echo "pytest $$computing (nice 19, beside the serial part; its output follows the serial part's)"; \
	eval nice -n 19 $(BIN)/pytest $$computing > $(COMPUTING_LOG) 2>&1 & pid=$$!; \
	echo "pytest -m serial"; $(BIN)/pytest -m serial; serial=$$?; \
	echo "waiting for the computing part (pytest $$computing)"; wait $$pid; computing_code=$$?; \
	cat $(COMPUTING_LOG); \
	verdict serial $$serial; s=$$?; verdict computing $$computing_code; c=$$?; \
	if [ $$s -ne 0 ]; then exit $$s; fi; exit $$c

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(COMPUTING_LOG) .pytest_cache .mypy_cache .ruff_cache .hypothesis
