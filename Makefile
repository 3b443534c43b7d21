# Hearth: `make run` starts the app, `make test` runs the whole suite headless.
# Both create .venv and install what they need; the second time they only check.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
EXTRAS ?= gguf,default-model,gpu
# The CPU build of torch that lies on this kind of machine's disk; only the test
# set-up pins it (users get a plain requirement and their own CUDA build).
TEST_TORCH ?= torch==2.13.0

.PHONY: run test bench bundle icons clean-venv system-deps

run: $(VENV)/.run-installed
	@$(PY) -c "import sys; from app.misc.desktop_entry import is_freedesktop, is_installed; sys.exit(int(is_freedesktop() and not is_installed()))" || echo "Tip: $(VENV)/bin/hearth --install-desktop-entry adds Hearth to your application menu."
	$(PY) -m app

test: $(VENV)/.test-installed
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider

bench: $(VENV)/.run-installed
	$(PY) -m engine.bench

bundle: $(VENV)/.run-installed
	$(PIP) install -q "pyinstaller>=6.10"
	$(PY) -m PyInstaller --noconfirm packaging/hearth.spec
	@echo "Built dist/hearth/hearth; 'sh packaging/linux/install.sh' adds it to your menu."

icons: $(VENV)/.run-installed
	$(PY) packaging/make_icons.py

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

system-deps:
	@sh packaging/install-system-deps.sh

$(VENV)/.run-installed: pyproject.toml $(VENV)/bin/python packaging/pip-install-llama.sh
	@sh packaging/install-system-deps.sh
	@sh packaging/pip-install-llama.sh $(PY)
	$(PIP) install -q -e ".[$(EXTRAS)]"
	@touch $@

$(VENV)/.test-installed: $(VENV)/.run-installed
	$(PIP) install -q "$(TEST_TORCH)"
	$(PIP) install -q -e ".[all,test]"
	@touch $@

clean-venv:
	rm -rf $(VENV)

# The GPU check (engine/gpucheck, README "GPU check"): prepare on this machine (PyPI reachable), run on a
# GPU machine with python3 and its own torch (no venv there, no network), dry-run here on the CPU.
GPU_PART ?= all
.PHONY: gpu-check gpu-check-prepare gpu-check-dry
gpu-check:
	PYTHONUNBUFFERED=1 python3 -m engine.gpucheck --part $(GPU_PART)

gpu-check-prepare: $(VENV)/.run-installed
	$(PY) -m engine.gpucheck --prepare

gpu-check-dry: $(VENV)/.test-installed
	$(PY) -m engine.gpucheck --dry-run
