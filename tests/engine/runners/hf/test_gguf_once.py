"""One transformers load of a GGUF parses its header once: the reader and the tensor-name map are shared inside
`read_once()` only, a changed file is read again, and gguf-py's own names come back afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import gguf
import numpy as np
import pytest

from engine.runners.hf.gguf_once import read_once


def _write(path: Path, value: int) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("test.value", value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _value(reader: gguf.GGUFReader) -> int:
    field = reader.get_field("test.value")
    assert field is not None
    return int(field.contents())


def test_inside_one_load_a_file_is_parsed_once_and_a_changed_one_again(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    _write(path, 1)
    real_reader, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with read_once():
        first = gguf.GGUFReader(str(path))
        assert gguf.GGUFReader(path) is first, "the same file by another spelling of its path"
        assert _value(first) == 1 and first.tensors[0].name == "token_embd.weight"
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
        assert gguf.get_tensor_name_map(arch, 3) is not gguf.get_tensor_name_map(arch, 2)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (real_reader, real_map)
    assert gguf.GGUFReader(str(path)) is not gguf.GGUFReader(str(path)), "outside a load, gguf-py's own reader"


@pytest.mark.skipif(os.name == "nt", reason="Windows cannot rewrite a file that a reader keeps mapped")
def test_a_file_written_again_during_the_load_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    _write(path, 1)
    with read_once():
        first = gguf.GGUFReader(str(path))
        stat = path.stat()
        _write(path, 2)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        again = gguf.GGUFReader(str(path))
        assert again is not first and _value(again) == 2
