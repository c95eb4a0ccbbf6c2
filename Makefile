# baglm-workbench: set-up, tests, lint and notebook figures.
#
#   make setup      apt ffmpeg + chromium (when root) + .venv + pip install -e ".[dev,server-tests,ray]"
#                   + llama.cpp's GGUF converter + Jupyter kernel, with a timing line per phase
#                   (scripts/setup.sh)
#   make test       the whole suite in .venv on 3 pytest-xdist workers, one test file per worker at
#                   a time (TEST_WORKERS=0: in one process); a test that cannot run fails (never skips)
#   make test-fast  the quick subset: -m "not slow and not browser and not server and not ray"
#   make lint       ruff check + ruff format --check
#   make data       prepare the simulated score caches the figure notebooks read (data/cache/)
#   make figures    run notebooks/[0-9]*.ipynb headlessly into figures/<stem>/ from prepared data,
#                   each whose page figures/<stem>/<stem>.html is older than its notebook, the
#                   package, the runner or the prepared data (make -j2 figures: two at a time)
#   make figures/03_main_results   render one notebook (one rule per notebook)
#                   (make figures NOTEBOOKS="notebooks/02_x.ipynb" PAPERMILL_ARGS="-p limit 5",
#                   02_dependencies: "-p group_limit 5"; PAPERMILL_ARGS runs them again whatever
#                   their age)
#   make lab        JupyterLab from .venv on 127.0.0.1:$(LAB_PORT), no browser, opening the explorer
#                   (/lab/tree/explore.ipynb, an ignored copy in $(LAB_DIR)/; --allow-root as root)

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
LINT_PATHS := baglm_nb tests benchmarks

PYTEST_ARGS ?=
# pytest-xdist: most slow tests wait on subprocesses (notebooks, servers, Ray, chromium); a file's
# tests stay on one worker, so its module fixtures (models, servers, clusters) are built once;
# a notebook's run and the tests of its page are one group of their own (tests/conftest.py:
# xdist_group), and the longest groups start first (the conftest's order, kept by
# --no-loadscope-reorder). Three workers on 2 cores: about a third of the tests' wall time is
# waiting (servers, Ray, chromium, real-time streams), which the third worker fills; each worker
# computes on one thread (tests/conftest.py).
TEST_WORKERS ?= 3
# Bytecode: the test run writes .pyc files (__pycache__ beside each source, ignored by git) even
# where the environment sets PYTHONDONTWRITEBYTECODE (which stops the writing, not the reading).
# Without them every worker compiles and assertion-rewrites all the test modules again on every
# run, and every process the tests start (CLI runs, notebook kernels, servers' clients) compiles
# the baglm_nb modules it imports from source. Not PYTHONPYCACHEPREFIX: that would also move
# site-packages' caches. Measured by benchmarks/startup_cost.py (README: How long the quick
# start takes).
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE
XDIST_ARGS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
NOTEBOOKS ?=
PAPERMILL_ARGS ?=
export PAPERMILL_ARGS
LAB_PORT ?= 8888
LAB_ARGS ?=
LAB_DIR ?= lab
LAB_URL = http://127.0.0.1:$(LAB_PORT)/lab/tree/explore.ipynb

# The dataset names, from baglm_nb.inputs.datasets.DATASETS through the CLI; recursive (=), so it
# runs only in the recipes that use it (make help / make setup need no venv).
DATASETS = $(shell $(VPY) -m baglm_nb stats --names)
PREPARED := data/cache/prepared.json
NOTEBOOK_STEMS := $(basename $(notdir $(wildcard notebooks/[0-9]*.ipynb)))
FIGURE_TARGETS := $(addprefix figures/,$(NOTEBOOK_STEMS))
# A notebook's rule makes its page, figures/<stem>/<stem>.html (the runner writes it last, after
# the notebook ran), so that make knows what is done and `make -j2 figures` runs two at a time.
figure_page = figures/$(1)/$(1).html
FIGURE_PAGES := $(foreach stem,$(NOTEBOOK_STEMS),$(call figure_page,$(stem)))
# What every page is made from besides its notebook.
FIGURE_INPUTS := $(PREPARED) scripts/run_notebooks.sh \
  $(shell find baglm_nb -name '*.py' -not -path '*/__pycache__/*')
SELECTED_STEMS := $(if $(NOTEBOOKS),$(basename $(notdir $(NOTEBOOKS))),$(NOTEBOOK_STEMS))
UNKNOWN_STEMS := $(filter-out $(NOTEBOOK_STEMS),$(SELECTED_STEMS))

.PHONY: help setup test test-fast lint data figures lab clean-figures clean-data $(FIGURE_TARGETS)
ifneq ($(PAPERMILL_ARGS),)
.PHONY: $(FIGURE_PAGES)  # other parameters: run again whatever the pages' age
endif

help:
	@echo "baglm-workbench targets:"
	@echo "  make setup          everything the tests need: ffmpeg + chromium (apt-get when root, else the"
	@echo "                      command is printed), $(VENV), pip install -e \".[dev,server-tests,ray]\""
	@echo "                      and requirements-nodeps.txt (no compiling), llama.cpp's GGUF converter from"
	@echo "                      the xllamacpp sdist (scripts/fetch_gguf_converter.sh), the 'python3' Jupyter"
	@echo "                      kernel; timing per phase (re-runs are quick)"
	@echo "  make test           the whole suite on $(TEST_WORKERS) pytest-xdist workers (a test file per worker);"
	@echo "                      a test that cannot run fails with the install command"
	@echo "                      [PYTEST_ARGS=\"-x\"] [TEST_WORKERS=0: one process]"
	@echo "  make test-fast      the quick subset: -m \"not slow and not browser and not server and"
	@echo "                      not ray\" (ray: the tests on a local Ray cluster)"
	@echo "  make lint           ruff check + ruff format --check on $(LINT_PATHS)"
	@echo "  make data           simulate the four datasets' score caches into data/cache/ and write"
	@echo "                      $(PREPARED), the notebooks' 'scores' parameter file (CPU default)"
	@echo "  make figures        make data, then execute notebooks/[0-9]*.ipynb into figures/<stem>/"
	@echo "                      (+ HTML) [NOTEBOOKS=\"notebooks/02_x.ipynb\"] [PAPERMILL_ARGS=\"-p limit 5\"]"
	@echo "  make figures/<stem> render one notebook from prepared data, e.g. figures/03_main_results;"
	@echo "                      both run only notebooks older than their inputs (make -j2 figures:"
	@echo "                      two at a time; PAPERMILL_ARGS runs them again)"
	@echo "                      ($(NOTEBOOK_STEMS))"
	@echo "  make lab            JupyterLab from $(VENV) opening the explorer, $(LAB_URL)"
	@echo "                      (printed with its token; no browser is started; --allow-root when run as"
	@echo "                      root); it serves $(LAB_DIR)/, an ignored copy of notebooks/explore.ipynb, so"
	@echo "                      using it leaves git status clean [LAB_PORT=8889] [LAB_ARGS=\"...\"]"
	@echo "  make clean-figures  remove the generated figures/<stem>/ folders"
	@echo "  make clean-data     remove the prepared simulated caches (make data rebuilds them)"
	@echo "  make help           this list"

setup:
	@bash scripts/setup.sh

define require_venv
	@test -x $(VPY) || { echo "error: $(VENV) is not set up; run 'make setup' first" >&2; exit 1; }
endef

test:
	$(require_venv)
	@echo "$(TEST_ENV) $(VPY) -m pytest $(XDIST_ARGS) $(PYTEST_ARGS)"; \
	$(TEST_ENV) $(VPY) -m pytest $(XDIST_ARGS) $(PYTEST_ARGS) || { rc=$$?; \
	  if [ $$rc = 5 ]; then echo "error: pytest collected no tests (exit code 5); tests must exist." >&2; fi; \
	  exit $$rc; }

test-fast:
	$(MAKE) --no-print-directory test PYTEST_ARGS='-m "not slow and not browser and not server and not ray" $(PYTEST_ARGS)'

lint:
	$(require_venv)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

# Prepared data, computed once: the simulated score caches (the labelled CPU default, the default
# twin) of every dataset. Rebuilt from scratch when the simulation code, its fitted parameters
# (the dataset specs) or an annotation file changes.
data: $(PREPARED)

$(PREPARED): baglm_nb/core/simulate.py baglm_nb/core/twins.py baglm_nb/inputs/datasets.py $(wildcard data/annotations/*.json)
	$(require_venv)
	rm -rf $(addprefix data/cache/scores/,$(addsuffix /simulated,$(DATASETS)))
	$(VPY) -m baglm_nb simulate --dataset $(DATASETS) --cache-root data/cache --manifest $@

ifneq ($(filter figures,$(MAKECMDGOALS)),)
ifneq ($(UNKNOWN_STEMS),)
$(error NOTEBOOKS names no notebooks/[0-9]*.ipynb: $(UNKNOWN_STEMS))
endif
endif
# The pages that need making are found first (make -q, make's own rule), so that each notebook's
# rule prints [i/N] across the whole run (scripts/run_notebooks.sh: FIGURES_*).
SELECTED_PAGES := $(foreach stem,$(SELECTED_STEMS),$(call figure_page,$(stem)))
FIGURES_COUNTER ?=
FIGURES_TOTAL ?=
FIGURES_T0 ?=
export FIGURES_COUNTER FIGURES_TOTAL FIGURES_T0
figures:
	$(require_venv)
	@stale=""; for page in $(SELECTED_PAGES); do \
	  $(MAKE) -q --no-print-directory $$page >/dev/null 2>&1 || stale="$$stale $$page"; \
	done; \
	n=$$(echo $$stale | wc -w); \
	if [ "$$n" = 0 ]; then echo "figures: all $(words $(SELECTED_PAGES)) pages are up to date"; exit 0; fi; \
	mkdir -p figures/_work; counter="$(abspath figures/_work)/progress.$$$$"; t0=$$(date +%s); \
	echo "figures: $$n of $(words $(SELECTED_PAGES)) notebooks to run"; \
	$(MAKE) --no-print-directory $$stale FIGURES_TOTAL=$$n FIGURES_COUNTER="$$counter" \
	  FIGURES_T0=$$t0; rc=$$?; rm -f "$$counter" "$$counter.lock"; \
	[ $$rc = 0 ] && echo "figures: $$n notebook(s) executed in $$(( $$(date +%s) - t0 )) s; outputs in figures/"; \
	exit $$rc

# One rule per notebook: `make figures/05_analysis` renders that notebook alone.
.SECONDEXPANSION:
$(FIGURE_PAGES): figures/%.html: notebooks/$$(notdir $$*).ipynb $(FIGURE_INPUTS)
	$(require_venv)
	@PARAMS_FILE=$(PREPARED) bash scripts/run_notebooks.sh $<

$(FIGURE_TARGETS): figures/%: $$(call figure_page,$$*)

# JupyterLab from the venv (no activation needed), its kernelspec first, on 127.0.0.1 only,
# serving $(LAB_DIR)/ (ignored by git): a working copy of notebooks/explore.ipynb, so that using
# the explorer (outputs, widget state, autosave) never modifies a tracked file. The copy is made
# when missing and refreshed when the tracked notebook is newer (the old copy kept as .old).
# Its URL is the explorer's, /lab/tree/explore.ipynb (JupyterLab's default_url, also where the
# server root leads); JupyterLab prints it with its token. baglm_nb.apps.lab is `jupyter lab`
# with a cheaper start (no IRI grammar compiled) and nothing fetched from the network or built
# while a page loads (no news, no update check, no PyPI queries, no build check).
lab:
	$(require_venv)
	@mkdir -p $(LAB_DIR)
	@if [ notebooks/explore.ipynb -nt $(LAB_DIR)/explore.ipynb ]; then \
	  if [ -e $(LAB_DIR)/explore.ipynb ]; then mv $(LAB_DIR)/explore.ipynb $(LAB_DIR)/explore.ipynb.old; fi; \
	  cp notebooks/explore.ipynb $(LAB_DIR)/explore.ipynb; fi
	@echo "make lab: the explorer is $(LAB_URL) (open the URL with the token that JupyterLab prints below)"
	PATH="$(abspath $(VENV))/bin:$$PATH" JUPYTER_PATH="$(abspath $(VENV))/share/jupyter" \
	  $(VPY) -m baglm_nb.apps.lab --ServerApp.root_dir=$(LAB_DIR) \
	  --LabApp.default_url=/lab/tree/explore.ipynb --ip=127.0.0.1 --port=$(LAB_PORT) \
	  --ServerApp.port_retries=0 --no-browser $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Remove only the per-notebook output folders (figures/<stem>/ for notebooks/[0-9]*),
# plus any figures/[0-9]*/ left behind by renamed notebooks.
clean-figures:
	rm -rf figures/[0-9]*/ figures/_work/

clean-data:
	rm -rf data/cache/scores/*/simulated $(PREPARED)
