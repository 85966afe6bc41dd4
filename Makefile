# The README's commands. Everything a fresh clone needs is installed from here.
#   make book   build the HTML book into _build/html
#   make test   every test (CI runs this through .ci/run)
#   make lab    JupyterLab on a private copy of the labs (work/); `make lab EDITION=zh` for the Chinese labs
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2
# pip's complaints about this machine's missing local index folders say nothing about the install.
PIP_NOISE := /is ignored: it is neither a file nor a directory/d
# Debian packages: bubblewrap (the grader's sandbox), chromium (browser tests), fonts-noto-cjk (the glossary's Chinese).
APT_PACKAGES := bubblewrap chromium fonts-noto-cjk

.PHONY: setup system vendor book test lab lock strip clean bench i18n
.DEFAULT_GOAL := help

help:
	@echo "make book   build the book into _build/html"
	@echo "make test   run every test (unit, property, notebooks, book build, grader, browser)"
	@echo "make lab    open JupyterLab on your own copy of the labs in work/"
	@echo "make bench  benchmarks: attention, multi-head attention, notebooks and book build (tables + benchmarks/results/*.json)"

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock 2>&1 | sed '$(PIP_NOISE)'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e . 2>&1 | sed '$(PIP_NOISE)'
	touch $@

setup: $(STAMP)

# Installs the Debian packages that are missing; needs root or sudo (a no-op when all are present).
system:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then echo "Please install: $$missing (no apt-get here)"; exit 1; fi; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "Installing Debian packages: $$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi

# The book's browser assets (MathJax 3, RequireJS, the ipywidgets manager), pinned in package-lock.json and copied
# into assets/vendor/, so that the built HTML needs no internet. npm ci runs again only when the lock changes.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund

vendor: $(STAMP) node_modules/.package-lock.json
	$(BIN)/python tools/vendor_assets.py

book: $(STAMP) vendor
	$(BIN)/jupyter-book build -W -n --keep-going .
	$(BIN)/python tools/i18n.py build  # the Chinese edition into _build/html/zh, reusing the execution cache
	@echo "Open file://$(CURDIR)/_build/html/index.html (中文版: file://$(CURDIR)/_build/html/zh/index.html)"

# --- Two editions (locales/README.md): English messages -> catalogs (changed ones go fuzzy), then the counts.
i18n: $(STAMP) vendor
	$(BIN)/python tools/i18n.py extract
	$(BIN)/python tools/i18n.py update
	$(BIN)/python tools/i18n.py check || true
# --- end of the two editions' targets

# One thread per pytest worker (and per kernel it starts): $(JOBS) workers share the cores without oversubscribing them.
test: $(STAMP) system book
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadscope --nbval-lax --nbval-current-env

# Students work on copies in work/ (git-ignored; never overwritten), with nbgrader's instructor tools hidden.
# EDITION=zh: the Chinese labs (labs/zh/), copied into work/zh/.
EDITION ?= en
WORK := work$(if $(filter-out en,$(EDITION)),/$(EDITION))
lab: $(STAMP)
	$(BIN)/python -m qkv.cli workspace $(WORK) --edition $(EDITION)
	JUPYTER_CONFIG_PATH=$(CURDIR)/student/jupyter $(BIN)/jupyter lab --notebook-dir=$(WORK)

lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^qkv' | sed 's/^torch==\(.*\)+cpu/torch==\1/' > requirements.lock.new
	@echo "Review requirements.lock.new, keep the header lines, then move it over requirements.lock"

# Strip outputs from every committed notebook, keeping cell ids stable (the labs are regenerated, not stripped).
STRIP_KEYS := metadata.jupytext metadata.widgets cell.metadata.lines_to_next_cell cell.metadata.execution
strip: $(STAMP)
	git ls-files '*.ipynb' ':!labs/**' | xargs $(BIN)/nbstripout --keep-id --extra-keys "$(STRIP_KEYS)"

# Benchmarks print tables and write benchmarks/results/*.json (never timed assertions). The book build needs vendor.
bench: $(STAMP) vendor
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/multihead.py
	$(BIN)/python benchmarks/notebooks.py
	$(BIN)/python benchmarks/gpu_check.py

clean:
	rm -rf _build
