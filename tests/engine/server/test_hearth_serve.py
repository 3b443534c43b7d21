"""`hearth-serve` in a subprocess with PySide6 made unimportable: the ready line, answers, SIGTERM ends streams and exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[3]
NO_QT = ("import sys; sys.modules.update(dict.fromkeys(['PySide6', 'shiboken6', 'PyQt5', 'PyQt6'])); "
         "from engine.server.cli import main; sys.exit(main())")


@pytest.fixture
def serve(default_model: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", NO_QT, "--model", default_model, "--port", "0", "--threads", "1", "--slots", "2",
         "--context", "1024"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()  # blocks until the line, or EOF if it died
        assert ready.startswith("hearth-serve: serving "), (ready, process.stderr.read() if process.stderr else "")
        url = ready.split(" at ", 1)[1].split(" ", 1)[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def test_it_answers_and_sigterm_ends_the_stream_with_a_finish_reason_and_exits_0(serve) -> None:  # type: ignore[no-untyped-def]
    import openai

    process, url = serve
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120) as client:
        answer = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", temperature=0, max_tokens=8,
                                                messages=[{"role": "user", "content": "Hello!"}],
                                                extra_body={"ignore_eos": True})  # 8 whatever the model says
        assert answer.choices[0].message.content and answer.usage.completion_tokens == 8
        chunks: list[object] = []
        streaming = threading.Event()

        def read_stream() -> None:
            stream = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", stream=True, max_tokens=900,
                                                    messages=[{"role": "user", "content": "Tell a long story."}],
                                                    extra_body={"ignore_eos": True})
            for chunk in stream:
                chunks.append(chunk)
                if len(chunks) >= 5:
                    streaming.set()

        reader = threading.Thread(target=read_stream)
        reader.start()
        assert streaming.wait(120)
        process.terminate()  # SIGTERM
        reader.join(30)
        assert process.wait(30) == 0  # the stream ended (below) and the process exited cleanly
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"  # type: ignore[attr-defined]
    assert "shutting down" in last.choices[0].model_extra["note"]  # type: ignore[attr-defined]
    assert len(chunks) < 900
    assert process.stdout is not None and "stopped" in process.stdout.read()


def test_the_server_package_imports_no_qt() -> None:
    code = ("import sys, engine.server, engine.server.cli; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'app'))))")
    output = subprocess.run([sys.executable, "-c", "import json; " + code], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    assert json.loads(output) == []


def test_hearth_serve_is_a_console_script() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["hearth-serve"] == "engine.server.cli:main"
    assert "server" in project["optional-dependencies"]["all"][0]


def test_another_host_needs_a_key(default_model: str) -> None:
    result = subprocess.run([sys.executable, "-c", NO_QT, "--model", default_model, "--host", "0.0.0.0"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if k != "HEARTH_API_KEY"})
    assert result.returncode == 2 and "API key" in result.stderr


def test_a_models_folder_is_served_on_demand_with_a_cap(requantized_model: str, default_model: str,
                                                         tmp_path: Path) -> None:
    """--models-dir with no --model: nothing loaded until named; --max-loaded 1 swaps the idle one out."""
    import shutil

    import openai

    for source in (requantized_model, default_model):
        shutil.copy(source, tmp_path / Path(source).name)
    process = subprocess.Popen(
        [sys.executable, "-c", NO_QT, "--models-dir", str(tmp_path), "--max-loaded", "1", "--port", "0",
         "--threads", "1", "--slots", "1", "--context", "512", "--alias", "gpt-4o=SmolLM2-135M-Instruct.Q4_0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready.startswith(f"hearth-serve: serving the models in {tmp_path} at "), ready
        url = ready.split(" at ", 1)[1].split(" ", 1)[0].rstrip(",")
        with openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120) as client:
            def loaded() -> dict[str, bool]:
                return {m.id: m.model_extra["loaded"] for m in client.models.list()}

            assert loaded() == {"SmolLM2-135M-Instruct.Q4_0": False, "SmolLM2-135M-Instruct.Q4_1": False}
            for name, answered_by in (("gpt-4o", "SmolLM2-135M-Instruct.Q4_0"),
                                      ("SmolLM2-135M-Instruct.Q4_1", "SmolLM2-135M-Instruct.Q4_1")):
                answer = client.chat.completions.create(model=name, max_tokens=4, temperature=0,
                                                        messages=[{"role": "user", "content": "Hi"}])
                assert answer.model == answered_by
                assert [model for model, is_loaded in loaded().items() if is_loaded] == [answered_by]
        process.terminate()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def test_bad_model_flags_are_refused_in_words(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from engine.server.cli import parse

    for argv, said in ((["--alias", "gpt-4o"], "--alias takes NAME=MODEL"),
                       (["--max-loaded", "-1"], "cannot be negative"),
                       (["--models-dir", str(tmp_path / "nowhere")], "is not a folder")):
        with pytest.raises(SystemExit):
            parse(argv)
        assert said in capsys.readouterr().err
    assert parse(["--models-dir", str(tmp_path)]).model is None  # nothing loaded until a request names one


def test_mmproj_that_is_no_gguf_or_has_no_gguf_model_is_refused_in_words(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path, default_model: str) -> None:
    from engine.server.cli import parse

    text = tmp_path / "notes.gguf"
    text.write_text("not a projector")
    folder = tmp_path / "hf-model"
    folder.mkdir()
    for argv, said in ((["--model", default_model, "--mmproj", str(text)], f"--mmproj {text} is not a GGUF file"),
                       (["--model", default_model, "--mmproj", str(tmp_path / "gone.gguf")], "cannot be read"),
                       (["--model", str(folder), "--mmproj", str(text)], "is for a GGUF model (llama.cpp)"),
                       (["--models-dir", str(tmp_path), "--mmproj", str(text)], "--mmproj needs --model")):
        with pytest.raises(SystemExit):
            parse(argv)
        assert said in capsys.readouterr().err


def test_mmproj_gives_the_served_model_its_eyes(default_model: str, tmp_path: Path) -> None:
    import urllib.request

    from engine.randweights.mmproj import write_mmproj

    (tmp_path / "elsewhere").mkdir()
    projector = write_mmproj(tmp_path / "elsewhere" / "vision-576.gguf", 576)  # not beside the model: only the flag finds it
    process = subprocess.Popen(
        [sys.executable, "-c", NO_QT, "--model", default_model, "--mmproj", str(projector), "--port", "0",
         "--threads", "1", "--slots", "1", "--context", "1024"], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready.startswith("hearth-serve: serving "), (ready, process.stderr.read() if process.stderr else "")
        url = ready.split(" at ", 1)[1].split(" ", 1)[0]
        with urllib.request.urlopen(f"{url}/models", timeout=30) as answer:  # noqa: S310 - 127.0.0.1
            [model] = json.loads(answer.read())["data"]
        assert "vision" in json.dumps(model), model
    finally:
        process.kill()
        process.wait(30)
