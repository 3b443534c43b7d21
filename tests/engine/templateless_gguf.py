"""A copy of a GGUF file without its chat template, as a base model comes: written with the gguf package."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"
EOS_KEY = "tokenizer.ggml.eos_token_id"


def write_without_chat_template(source: str | Path, target: Path, eos_token_id: int | None = None) -> Path:
    """Every field and tensor of `source` but the chat template; `eos_token_id` replaces the end token."""
    import gguf

    reader = gguf.GGUFReader(source)
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    assert architecture is not None
    writer = gguf.GGUFWriter(target, arch=str(architecture.contents()), endianess=reader.endianess)
    alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = int(alignment.contents())
    copy_into(writer, reader, lambda name: not name.startswith(CHAT_TEMPLATE_KEY),  # what a base model lacks
              {EOS_KEY: eos_token_id} if eos_token_id is not None else {})
    return target


def copy_into(writer: Any, reader: Any, keep: Callable[[str], bool] = lambda name: True,
              values: dict[str, Any] | None = None) -> None:
    """Write `reader`'s fields (those `keep` accepts; `values` replacing some) and tensors with `writer`,
    and close it. The architecture and the GGUF.* fields are left out: the writer adds those itself."""
    import gguf

    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF.") or not keep(field.name):
            continue
        value = (values or {}).get(field.name, field.contents())
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    for tensor in reader.tensors:
        writer.add_tensor_info(tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes,
                               tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in reader.tensors:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
