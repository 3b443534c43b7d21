"""Random-weight model files of real shapes: what tests, the benchmark and the GPU check load where a
real file is too large to carry or to build.

gguf_model.py writes llama-shaped GGUF text models (from a real file's skeleton, or from a shape);
mmproj.py a tiny LLaVA vision projector; vision_text.py and vision_projectors.py the text models and
projectors of the other vision families. Their text is noise; their speed, memory and token layout are real.
They depend on nothing else of the engine, so every package that needs one may import it.
"""
