"""packaging/pip-install-llama.sh's choices and packaging/pypi_cuda.py's toolkit, on stand-ins for the GPU tools.

The script is driven with a stub Python that records what it was asked (no
download, no compile) and a fake nvidia-smi; pypi_cuda.py's pure parts run for real.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "packaging" / "pip-install-llama.sh"
sys.path.insert(0, str(REPO / "packaging"))
import pypi_cuda  # noqa: E402

STUB_PYTHON = """#!/bin/sh
echo "$* | CMAKE_ARGS=$CMAKE_ARGS" >> "$STUB_LOG"
case "$*" in
  "-c import llama_cpp") exit 1 ;;
  *importlib.metadata*) exit 1 ;;
  *"pypi_cuda.py install"*) exit "${TOOLKIT_RC:-0}" ;;
  *pypi_cuda.py*) exec "$REAL_PYTHON" "$@" ;;
  "-m pip install"*)
    n=$(cat "$STUB_LOG.pip" 2>/dev/null || echo 0); echo $((n + 1)) > "$STUB_LOG.pip"
    [ "$n" = 0 ] && exit "${FIRST_PIP_RC:-0}"; exit 0 ;;
  *llama_supports_gpu_offload*) exit 0 ;;
esac
exit 0
"""


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def machine(tmp_path: Path):
    """(run, log): run the script with a fake GPU driver of a CUDA version, optionally an nvcc."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = executable(venv_bin / "python", STUB_PYTHON)
    tools = tmp_path / "tools"
    tools.mkdir()
    log = tmp_path / "calls.log"

    def run(cuda: str | None, nvcc: bool = False, **env: str) -> tuple[int, str, list[str]]:
        for name in ("nvidia-smi", "nvcc"):
            (tools / name).unlink(missing_ok=True)
        if cuda is not None:
            executable(tools / "nvidia-smi", f"#!/bin/sh\n[ \"$1\" = -L ] && echo 'GPU 0: NVIDIA RTX' && exit 0\n"
                       f"echo '| NVIDIA-SMI 580.1   Driver Version: 580.1   CUDA Version: {cuda}  |'\n")
        if nvcc:
            executable(tools / "nvcc", "#!/bin/sh\nexit 0\n")
        variables = dict(PATH=f"{tools}:/usr/bin:/bin", STUB_LOG=str(log), REAL_PYTHON=sys.executable, **env)
        done = subprocess.run(["sh", str(SCRIPT), str(python)], capture_output=True, text=True, timeout=60,
                              env={**{k: v for k, v in os.environ.items() if k == "HOME"}, **variables})
        calls = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        Path(f"{log}.pip").unlink(missing_ok=True)
        return done.returncode, done.stdout + done.stderr, calls

    return run, tmp_path / "venv"


def pip_installs(calls: list[str]) -> list[str]:
    return [call for call in calls if call.startswith("-m pip install")]


def test_a_cuda_13_driver_without_nvcc_builds_with_the_pypi_toolkit(machine) -> None:
    run, venv = machine
    code, output, calls = run("13.0")
    assert code == 0 and "built with CUDA" in output and "~550 MB" in output
    assert any(f"pypi_cuda.py install {venv}/cuda" in call for call in calls)
    [install] = pip_installs(calls)
    assert "--no-binary llama-cpp-python" in install and f"-DCUDAToolkit_ROOT={venv}/cuda/toolkit" in install
    assert f"-Wl,-rpath,{venv}/cuda/toolkit/lib" in install


def test_a_failed_cuda_build_falls_back_to_the_cpu(machine) -> None:
    run, _ = machine
    code, output, calls = run("13.0", FIRST_PIP_RC="1")
    assert code == 0 and "building for the CPU instead" in output
    cuda, cpu = pip_installs(calls)
    assert "GGML_CUDA" in cuda and "GGML_CUDA" not in cpu
    assert any(call.startswith("-m pip uninstall") for call in calls)
    code, output, calls = run("13.0", TOOLKIT_RC="1")
    assert code == 0 and "building for the CPU instead" in output
    assert ["GGML_CUDA" in call for call in pip_installs(calls)] == [False]


def test_an_older_driver_or_the_opt_out_builds_for_the_cpu_and_says_why(machine) -> None:
    run, _ = machine
    code, output, calls = run("12.4")
    assert code == 0 and "driver runs CUDA 12.4" in output and "CUDA 13 driver (580 or newer)" in output
    assert not any("pypi_cuda.py install" in call for call in calls)
    assert ["GGML_CUDA" in call for call in pip_installs(calls)] == [False]
    code, output, calls = run("13.0", HEARTH_CUDA_FROM_PYPI="0")
    assert code == 0 and "HEARTH_CUDA_FROM_PYPI=0" in output
    assert ["GGML_CUDA" in call for call in pip_installs(calls)] == [False]


def test_nvcc_or_no_gpu_keep_their_builds(machine) -> None:
    run, _ = machine
    code, output, calls = run("13.0", nvcc=True)
    assert code == 0 and "CUDA toolkit found" in output
    assert [call.split(" | ")[1] for call in pip_installs(calls)] == ["CMAKE_ARGS=-DGGML_CUDA=on"]
    code, output, calls = run(None)
    assert code == 0 and output == "" and len(pip_installs(calls)) == 1 and "GGML_CUDA" not in calls[-1]


def fake_wheels(root: Path, with_cublas: bool = True) -> Path:
    tree = root / "nvidia" / "cu13"
    names = ["bin/nvcc", "include/cuda_runtime.h", "lib/libcudart.so.13", "nvvm/bin/cicc"]
    names += ["include/cublas_v2.h", "lib/libcublas.so.13", "lib/libcublasLt.so.13"] if with_cublas else []
    for name in names:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(name)
    return tree


def test_assemble_adds_what_cmake_looks_for(tmp_path: Path) -> None:
    driver = tmp_path / "driver" / "libcuda.so.1"
    driver.parent.mkdir()
    driver.write_text("driver")
    root = pypi_cuda.assemble(tmp_path / "toolkit", [fake_wheels(tmp_path / "wheels")], driver)
    assert (root / "lib" / "libcublas.so").read_text() == "lib/libcublas.so.13"
    assert os.readlink(root / "lib" / "libcudart.so") == "libcudart.so.13"
    assert (root / "lib64" / "libcublasLt.so").exists() and (root / "bin" / "nvcc").is_symlink()
    assert (root / "lib" / "stubs" / "libcuda.so").read_text() == "driver"
    args = pypi_cuda.cmake_args(root)
    assert f"-DCUDAToolkit_ROOT={root}" in args and "-DCMAKE_CUDA_ARCHITECTURES=native" in args


def test_assemble_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(pypi_cuda.ToolkitError, match="include/cublas_v2.h, lib/libcublas.so.*driver's libcuda"):
        pypi_cuda.assemble(tmp_path / "toolkit", [fake_wheels(tmp_path / "wheels", with_cublas=False)], None)


def test_a_toolkit_without_cublas_takes_it_from_the_wheels(tmp_path: Path) -> None:
    system = tmp_path / "cuda-13.0"
    (system / "bin").mkdir(parents=True)
    (system / "bin" / "nvcc").write_text("system nvcc")
    driver = tmp_path / "libcuda.so.1"
    driver.write_text("driver")
    root = pypi_cuda.assemble(tmp_path / "toolkit", [system, fake_wheels(tmp_path / "wheels")], driver)
    assert (root / "bin" / "nvcc").read_text() == "system nvcc"  # the first source wins
    assert (root / "lib" / "libcublas.so").exists()


def test_the_driver_version_comes_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    executable(tmp_path / "nvidia-smi", "#!/bin/sh\necho '| Driver Version: 580.95   CUDA Version: 13.0     |'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert pypi_cuda.driver_cuda_version() == (13, 0)
    with pytest.raises(pypi_cuda.ToolkitError, match="CUDA 12.8.*CUDA 13's"):
        pypi_cuda.install(tmp_path / "cuda", (12, 8))
