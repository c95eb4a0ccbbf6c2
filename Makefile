# baglm-workbench: set-up, tests, lint and notebook figures.
#
#   make setup      system ffmpeg (apt, when root) + .venv + pip install -e ".[dev]" + kernel
#   make test       pytest in .venv        (make test PYTEST_ARGS="-m 'not slow'")
#   make lint       ruff check + ruff format --check
#   make data       prepare the simulated score caches the figure notebooks read (data/cache/)
#   make figures    run notebooks/[0-9]*.ipynb headlessly into figures/<stem>/ from prepared data
#   make figures/03_main_results   re-render one notebook (one rule per notebook)
#                   (make figures NOTEBOOKS="notebooks/02_x.ipynb" PAPERMILL_ARGS="-p limit 5")

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LINT_PATHS := baglm_nb tests benchmarks

PYTEST_ARGS ?=
NOTEBOOKS ?=
PAPERMILL_ARGS ?=
export PAPERMILL_ARGS

DATASETS := htstep crosstask ego4d_goalstep coin
PREPARED := data/cache/prepared.json
NOTEBOOK_STEMS := $(basename $(notdir $(wildcard notebooks/[0-9]*.ipynb)))
FIGURE_TARGETS := $(addprefix figures/,$(NOTEBOOK_STEMS))

.PHONY: help setup system-deps test lint data figures clean-figures clean-data $(FIGURE_TARGETS)

help:
	@echo "baglm-workbench targets:"
	@echo "  make setup          install ffmpeg (apt-get, when root), create $(VENV), pip install -e \".[dev]\","
	@echo "                      register the 'python3' Jupyter kernel inside $(VENV) (re-runs are no-ops)"
	@echo "  make test           run pytest in $(VENV)   [PYTEST_ARGS=\"-m 'not slow'\"]"
	@echo "  make lint           ruff check + ruff format --check on $(LINT_PATHS)"
	@echo "  make data           simulate the four datasets' score caches into data/cache/ and write"
	@echo "                      $(PREPARED), the notebooks' 'scores' parameter file (CPU default)"
	@echo "  make figures        make data, then execute notebooks/[0-9]*.ipynb into figures/<stem>/"
	@echo "                      (+ HTML) [NOTEBOOKS=\"notebooks/02_x.ipynb\"] [PAPERMILL_ARGS=\"-p limit 5\"]"
	@echo "  make figures/<stem> re-render one notebook from prepared data, e.g. figures/03_main_results"
	@echo "                      ($(NOTEBOOK_STEMS))"
	@echo "  make clean-figures  remove the generated figures/<stem>/ folders"
	@echo "  make clean-data     remove the prepared simulated caches (make data rebuilds them)"
	@echo "  make help           this list"

setup: system-deps $(STAMP)
	@echo "setup: done ($(VENV) is up to date; activate with 'source $(VENV)/bin/activate')"

# ffmpeg (needed by torchcodec at runtime) and, on bare Debian, python3-venv (ensurepip).
# Installed with apt-get only when running as root; otherwise just say what is missing.
system-deps:
	@set -e; \
	if ! $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then \
	  echo "error: $(PYTHON) must be Python >= 3.11 (found: $$($(PYTHON) --version 2>&1))" >&2; exit 1; \
	fi; \
	pkgs=""; \
	command -v ffmpeg >/dev/null 2>&1 || pkgs="$$pkgs ffmpeg"; \
	if [ ! -x $(VPY) ] && ! $(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1; then \
	  pkgs="$$pkgs python3-venv"; \
	fi; \
	if [ -z "$$pkgs" ]; then \
	  echo "system-deps: ffmpeg found at $$(command -v ffmpeg)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "system-deps: installing$$pkgs with apt-get"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q </dev/null && \
	  apt-get install -y -q --no-install-recommends $$pkgs </dev/null || { \
	    echo "error: 'apt-get install$$pkgs' failed (no network or apt sources?)" >&2; exit 1; }; \
	else \
	  echo "*************************************************************************"; \
	  echo "WARNING: missing system package(s):$$pkgs"; \
	  echo "  ffmpeg is needed by torchcodec to decode videos. Install it with:"; \
	  echo "      sudo apt-get install$$pkgs"; \
	  echo "  (conda users: see environment.yml). Continuing without it."; \
	  echo "*************************************************************************"; \
	fi

$(VPY):
	$(PYTHON) -m venv $(VENV)

# The stamp is newer than pyproject.toml once the install succeeded; a second
# `make setup` therefore does nothing. Touch pyproject.toml (or rm the stamp) to force.
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -e ".[dev]"
	$(VPY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (baglm)"
	touch $@

define require_venv
	@test -x $(VPY) || { echo "error: $(VENV) is not set up; run 'make setup' first" >&2; exit 1; }
endef

test:
	$(require_venv)
	@echo "$(VPY) -m pytest $(PYTEST_ARGS)"; \
	$(VPY) -m pytest $(PYTEST_ARGS) || { rc=$$?; \
	  if [ $$rc = 5 ]; then echo "error: pytest collected no tests (exit code 5); tests must exist." >&2; fi; \
	  exit $$rc; }

lint:
	$(require_venv)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

# Prepared data, computed once: the simulated score caches (the labelled CPU default) of every
# dataset. Rebuilt from scratch when the simulation code or an annotation file changes.
data: $(PREPARED)

$(PREPARED): baglm_nb/core/simulate.py $(wildcard data/annotations/*.json)
	$(require_venv)
	rm -rf $(addprefix data/cache/scores/,$(addsuffix /simulated,$(DATASETS)))
	$(VPY) -m baglm_nb simulate --dataset $(DATASETS) --cache-root data/cache --manifest $@

figures: $(PREPARED)
	$(require_venv)
	PARAMS_FILE=$(PREPARED) bash scripts/run_notebooks.sh $(NOTEBOOKS)

# One rule per notebook: `make figures/05_analysis` re-renders that notebook alone.
$(FIGURE_TARGETS): figures/%: notebooks/%.ipynb $(PREPARED)
	$(require_venv)
	PARAMS_FILE=$(PREPARED) bash scripts/run_notebooks.sh $<

# Remove only the per-notebook output folders (figures/<stem>/ for notebooks/[0-9]*),
# plus any figures/[0-9]*/ left behind by renamed notebooks.
clean-figures:
	rm -rf figures/[0-9]*/ figures/_work/

clean-data:
	rm -rf $(addprefix data/cache/scores/,$(addsuffix /simulated,$(DATASETS))) $(PREPARED)
