"""The random mlp projector loads in llama.cpp's libmtmd beside the default model and turns a picture
into a run of embeddings of the text model's width."""

from __future__ import annotations

import ctypes
from pathlib import Path

from engine.randweights.mmproj import IMAGE_SIZE, n_image_tokens, write_mmproj

N_EMBD = 576  # SmolLM2-135M


def test_random_projector_loads_and_encodes_a_picture(default_model: str, tmp_path: Path) -> None:
    import llama_cpp
    from llama_cpp import mtmd_cpp as m

    projector = write_mmproj(tmp_path / "mmproj-random.gguf", N_EMBD)
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(default_model.encode(), llama_cpp.llama_model_default_params())
    assert model
    params = m.mtmd_context_params_default()
    params.use_gpu = False
    params.n_threads = 1
    params.warmup = False
    ctx = m.mtmd_init_from_file(str(projector).encode(), model, params)
    chunks = m.mtmd_input_chunks_init()
    pixels = (ctypes.c_uint8 * (IMAGE_SIZE * IMAGE_SIZE * 3))(*(i % 256 for i in range(IMAGE_SIZE * IMAGE_SIZE * 3)))
    bitmap = m.mtmd_bitmap_init(IMAGE_SIZE, IMAGE_SIZE, pixels)
    try:
        assert ctx, "mtmd_init_from_file refused the random projector"
        assert m.mtmd_support_vision(ctx)
        assert not m.mtmd_decode_use_mrope(ctx)
        assert not m.mtmd_decode_use_non_causal(ctx, None)
        text = b"Look: " + m.mtmd_default_marker() + b" what is it?"
        prompt = m.mtmd_input_text(text, len(text), False, True)
        bitmaps = (m.mtmd_bitmap_p_ctypes * 1)(bitmap)
        assert m.mtmd_tokenize(ctx, chunks, ctypes.byref(prompt), bitmaps, 1) == 0
        kinds = [m.mtmd_input_chunk_get_type(m.mtmd_input_chunks_get(chunks, i))
                 for i in range(m.mtmd_input_chunks_size(chunks))]
        assert kinds == [m.MTMD_INPUT_CHUNK_TYPE_TEXT, m.MTMD_INPUT_CHUNK_TYPE_IMAGE, m.MTMD_INPUT_CHUNK_TYPE_TEXT]
        image = m.mtmd_input_chunks_get(chunks, 1)
        assert m.mtmd_input_chunk_get_n_tokens(image) == n_image_tokens()
        assert m.mtmd_input_chunk_get_n_pos(image) == n_image_tokens()
        assert m.mtmd_encode_chunk(ctx, image) == 0
        embd = m.mtmd_get_output_embd(ctx)
        values = [embd[i] for i in range(n_image_tokens() * N_EMBD)]
        assert any(v != 0.0 for v in values[-N_EMBD:])  # the last embedding is written too
    finally:
        m.mtmd_bitmap_free(bitmap)
        m.mtmd_input_chunks_free(chunks)
        if ctx:
            m.mtmd_free(ctx)
        llama_cpp.llama_model_free(model)
