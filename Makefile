# The README's commands. Everything a fresh clone needs is installed from here.
#   make book   build the HTML book into _build/html
#   make test   every test (CI runs this through .ci/run); `make test LAB=<id>` only those about one lab
#   make lab    JupyterLab on a private copy of the labs (work/), in its own venv (.venv-lab: no book or test tools);
#               `make lab EDITION=zh` for the Chinese labs
#   make dist   the wheel and sdist into dist/
#   make hub-demo  a JupyterHub course on 127.0.0.1:8000 with local users (root; hub/README.md); make test-hub its test
# torch comes in its own step, outside the hashed locks (its file differs per platform and index): the CPU build
# by default; `make setup TORCH=cuda` (on a fresh .venv) takes PyPI's CUDA build instead.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_VENV := .venv-lab
LAB_STAMP := $(LAB_VENV)/.installed
TORCH ?= cpu
ifeq ($(filter $(TORCH),cpu cuda),)
$(error TORCH must be cpu or cuda, got "$(TORCH)")
endif
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
PIP_INSTALL = $(1)/python -m pip install --quiet --disable-pip-version-check
JOBS ?= 2
# pip's complaints about this machine's missing local index folders say nothing about the install.
PIP_NOISE := /is ignored: it is neither a file nor a directory/d
# Debian packages: bubblewrap (the grader's sandbox), chromium (browser tests), fonts-noto-cjk (the glossary's Chinese).
APT_PACKAGES := bubblewrap chromium fonts-noto-cjk

.PHONY: setup system vendor book check test lab dist lock strip clean bench i18n hub-venv hub-demo test-hub
.DEFAULT_GOAL := help

help:
	@echo "make book   build the book into _build/html"
	@echo "make check  lint, format, types and the fast unit tests of the library and the grader (under a minute)"
	@echo "make test   run every test (unit, property, notebooks, book build, grader, browser)"
	@echo "make test LAB=soft_lookup  only the tests about one lab (its spec, self-checks, corpus, variants, notebooks)"
	@echo "make lab    open JupyterLab on your own copy of the labs in work/ (installs only what the labs need)"
	@echo "make dist   build the wheel and sdist into dist/"
	@echo "make hub-demo  a JupyterHub course with an instructor and three students on 127.0.0.1:8000 (as root)"
	@echo "make bench  benchmarks: attention, multi-head attention, notebooks and book build (tables + benchmarks/results/*.json)"

# torch==X from requirements-torch.txt into the venv whose bin folder is $(1). CPU: a wheel that pip's own find-links
# already offer is taken first, offline (--no-index fails at once where there is none); then PyPI plus PyPI's CPU
# index on Linux, whose X+cpu wins over PyPI's CUDA X (macOS wheels on PyPI are CPU builds). Its dependencies are in
# the locks, hence --no-deps. Where that index cannot be reached pip retries for a few seconds, then uses PyPI.
define install_torch
	if [ "$(TORCH)" = cuda ]; then $(call PIP_INSTALL,$(1)) -r requirements-torch.txt; \
	elif $(call PIP_INSTALL,$(1)) --no-deps --no-index -r requirements-torch.txt 2>/dev/null; then :; \
	else $(call PIP_INSTALL,$(1)) --no-deps --extra-index-url $(TORCH_CPU_INDEX) -r requirements-torch.txt; \
	fi 2>&1 | sed '$(PIP_NOISE)'
endef

# The authors' venv: every pinned package (book, labs, grader, tests, tools), checked against the lock's hashes.
$(STAMP): requirements.lock requirements-torch.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL,$(BIN)) -r requirements.lock 2>&1 | sed '$(PIP_NOISE)'
	$(call install_torch,$(BIN))
	$(call PIP_INSTALL,$(BIN)) --no-deps --no-build-isolation -e . 2>&1 | sed '$(PIP_NOISE)'
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
	$(BIN)/python tools/i18n.py grader  # the grader's messages (qkv grade --lang zh), compiled into the package
	$(BIN)/python tools/i18n.py diagrams  # the diagrams' labels, compiled into the package, and their CJK font subset
	$(BIN)/python tools/i18n.py check || true
# --- end of the two editions' targets

# One thread per pytest worker (and per kernel it starts): $(JOBS) workers share the cores without oversubscribing them.
# Lint and format check (ruff, ruff.toml), types (mypy over src/, pyproject's [tool.mypy]) and the fast unit tests of the
# library and the grader (its layers, templates, analysis, time limits, magics): under a minute, run first by CI.
FAST_TESTS := tests/test_attention.py tests/test_masks.py tests/test_multihead.py tests/test_positional.py \
	tests/test_chunked.py tests/test_encoder.py tests/test_errors.py tests/test_properties.py tests/test_docstrings.py \
	tests/test_lab_lists.py tests/grading/test_layers.py tests/grading/test_messages.py tests/grading/test_events.py \
	tests/grading/test_grade_analysis.py tests/grading/test_grade_analysis_scopes.py tests/grading/test_grade_time.py \
	tests/grading/test_fingerprint.py tests/grading/test_grade_magics.py
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check src tests benchmarks tools _ext conftest.py
	$(BIN)/mypy
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -p no:cacheprovider $(FAST_TESTS)

# --durations: the slowest tests in every log, beside the seconds per test group (tests/conftest.py).
# LAB=<id>: only the tests about that lab (tests/conftest.py's --lab), without the book build and the browser tests
# that read it (after `make book`: `.venv/bin/python -m pytest -m browser --lab <id>`).
test: $(STAMP) system $(if $(LAB),,book)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadscope --nbval-lax --nbval-current-env --durations=15 \
	  $(if $(LAB),-m "not hub and not browser" --lab $(LAB),-m "not hub")

# --- The JupyterHub course (hub/README.md): JupyterHub in its own venv (hub/requirements-hub.txt, hashed),
# configurable-http-proxy from npm (hub/package-lock.json, apart from the book's assets), local users created by hub/course_hub.py (root only).
HUB_VENV := .venv-hub
HUB_STAMP := $(HUB_VENV)/.installed
HUB_STATE ?= .hub
$(HUB_STAMP): hub/requirements-hub.txt
	test -x $(HUB_VENV)/bin/python || $(PYTHON) -m venv $(HUB_VENV)
	$(call PIP_INSTALL,$(HUB_VENV)/bin) --require-hashes -r hub/requirements-hub.txt 2>&1 | sed '$(PIP_NOISE)'
	touch $@

hub/node_modules/.package-lock.json: hub/package.json hub/package-lock.json
	npm ci --prefix hub --ignore-scripts --no-audit --no-fund

hub-venv: $(HUB_STAMP) hub/node_modules/.package-lock.json

# Resets the course each time: new homes and passwords for qkv-instructor and qkv-student1..3, an empty exchange.
hub-demo: $(STAMP) system hub-venv
	$(BIN)/python hub/course_hub.py setup $(HUB_STATE)
	@echo "JupyterHub on http://127.0.0.1:8000 (Ctrl-C stops it and every user's server); passwords: $(HUB_STATE)/users.json"
	cd $(HUB_STATE) && QKV_HUB_STATE=$(CURDIR)/$(HUB_STATE) $(CURDIR)/$(HUB_VENV)/bin/jupyterhub -f $(CURDIR)/hub/jupyterhub_config.py

# The course walked in Chromium: release, fetch, work, validate, qkv check, submit, collect, qkv grade, feedback.
test-hub: $(STAMP) system hub-venv
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -p no:cacheprovider -m hub tests/browser/test_hub_course.py
# --- end of the JupyterHub course's targets

# Students: their own venv with only what the labs need (requirements-lab.txt: JupyterLab, nbgrader's student
# extensions, matplotlib, ipywidgets; hashed) and copies in work/ (git-ignored; never overwritten), with nbgrader's
# instructor tools hidden. Containers often run as root: JupyterLab then needs --allow-root.
$(LAB_STAMP): requirements-lab.txt requirements-torch.txt pyproject.toml
	test -x $(LAB_VENV)/bin/python || $(PYTHON) -m venv $(LAB_VENV)
	$(call PIP_INSTALL,$(LAB_VENV)/bin) -r requirements-lab.txt 2>&1 | sed '$(PIP_NOISE)'
	$(call install_torch,$(LAB_VENV)/bin)
	$(call PIP_INSTALL,$(LAB_VENV)/bin) --no-deps --no-build-isolation -e . 2>&1 | sed '$(PIP_NOISE)'
	touch $@

# work/ has the course's shape: work/labs/<lab>/ beside work/chapters/, so a lab's "Read first" link opens its
# chapter; EDITION=zh: the Chinese labs in work/labs/zh/<lab>/, their chapters in work/labs/zh/chapters/.
EDITION ?= en

lab: $(LAB_STAMP)
	$(LAB_VENV)/bin/python -m qkv.cli workspace work --edition $(EDITION)
	@root=""; if [ "$$(id -u)" = 0 ]; then root=--allow-root; echo "make lab: running as root, so JupyterLab starts with --allow-root"; fi; \
	JUPYTER_CONFIG_PATH=$(CURDIR)/student/jupyter $(LAB_VENV)/bin/jupyter lab --notebook-dir=work $$root

# The wheel and sdist, built with the pinned build and setuptools (no isolated download: works offline).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .

# Both locks from pyproject.toml's extras, with hashes; torch (own step) and pip are left out. The student's lock
# starts from the authors' so that the two agree on every version they share.
LOCK := $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links \
	--unsafe-package torch --unsafe-package pip
# The locks hold torch's dependencies as its CPU build declares them (CUDA's add several GB of nvidia packages): that
# build must be reachable, e.g. PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu or a local find-links.
TORCH_VERSION = $(shell sed -n 's/^torch==//p' requirements-torch.txt)
lock: $(STAMP)
	echo "torch==$(TORCH_VERSION)+cpu" > $(VENV)/torch-cpu.txt
	$(LOCK) -c $(VENV)/torch-cpu.txt --all-extras -o requirements.lock pyproject.toml 2>&1 | sed '$(PIP_NOISE)'
	cp requirements.lock requirements-lab.txt
	$(LOCK) -c $(VENV)/torch-cpu.txt --extra course -o requirements-lab.txt pyproject.toml 2>&1 | sed '$(PIP_NOISE)'

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
	rm -rf _build dist build
