"""A tiny Llama-architecture Hugging Face model folder built in code, and helpers driving a runner.

The folder is real: config.json, generation_config.json, model.safetensors and
the tokenizer files (a byte-level BPE trained here on a few sentences, with a
ChatML chat template). Weights come from a fixed torch seed, so every build is
identical and no test ever downloads anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from engine.protocol import ChatMessage, SamplingParams
from engine.runners.base import SlotWork

if TYPE_CHECKING:
    from engine.runners.hf.runner import HfRunner

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0)  # the same as engine.runners.hf.runner.GREEDY, without torch

CORPUS = [
    "The capital of France is Paris. The capital of Italy is Rome.",
    "Hello! How are you today? I am fine, thank you.",
    "A small model answers questions about cats, dogs, bread and the weather.",
    "Once upon a time there was a quiet village near the sea.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12. Colours: red green blue.",
    "system user assistant: you are a helpful assistant who writes short answers.",
]
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tokenizer(folder: Path, extra_special: Sequence[str] = (), chat_template: str = CHAT_TEMPLATE):
    """-> PreTrainedTokenizerFast; `extra_special`: more special tokens (markers such as <think>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[*SPECIAL_TOKENS, *extra_special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(CORPUS, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.chat_template = chat_template
    if extra_special:
        tokenizer.add_special_tokens({"additional_special_tokens": list(extra_special)})
    tokenizer.save_pretrained(folder)
    return tokenizer


def build_tiny_llama(folder: Path, seed: int = 0, init_range: float = 0.2, extra_special: Sequence[str] = (),
                     chat_template: str = CHAT_TEMPLATE) -> Path:
    """Write the tiny model into `folder` (created) and return it."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(folder, extra_special, chat_template)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        # A wide init gives peaked random logits: greedy choices with clear
        # margins, so batched-vs-unbatched comparisons test logic, not rounding.
        initializer_range=init_range,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=[eos], pad_token_id=config.pad_token_id
    )
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def build_repeating_llama(folder: Path, steps: int = 50) -> Path:
    """The tiny model, trained for a few seconds to answer each CORPUS sentence with the sentence itself.

    A model that really copies its prompt is what prompt-lookup drafts are for; a random one never
    does. Fixed seeds and data: every build is the same model.
    """
    import torch
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

    build_tiny_llama(folder, init_range=0.02)  # a small init trains quickly and stays stable
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32)
    rows = []
    for sentence in CORPUS:
        asked = tokenizer.apply_chat_template([{"role": "user", "content": sentence}], tokenize=False,
                                              add_generation_prompt=True)
        rows.append((tokenizer.encode(asked), tokenizer.encode(sentence + "<|im_end|>")))
    width = max(len(question) + len(answer) for question, answer in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)  # only the answers are learned
    for row, (question, answer) in enumerate(rows):
        ids[row, : len(question) + len(answer)] = torch.tensor(question + answer)
        labels[row, len(question) : len(question) + len(answer)] = torch.tensor(answer)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: more threads only wait on each other, badly on a busy machine
    try:
        model.train()
        for _ in range(steps):
            loss = model(input_ids=ids, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(folder, safe_serialization=True)
    return folder


# ---------------------------------------------------------------- driving a runner without the engine


def prompt(runner: HfRunner, *texts: str) -> list[int]:
    roles = ["user", "assistant"]
    messages = [ChatMessage(roles[i % 2], text) for i, text in enumerate(texts)]  # type: ignore[arg-type]
    return runner.tokenize(runner.render_chat(messages))


def drive(
    runner: HfRunner,
    prompts: dict[int, Sequence[int]],
    new_tokens: int,
    chunk: int = 10_000,
    delays: dict[int, int] | None = None,
    start: dict[int, int] | None = None,
) -> dict[int, list[int]]:
    """A minimal scheduler: prompts fed in chunks beside other slots' decode tokens, one forward per step."""
    computed = {slot: (start or {}).get(slot, 0) for slot in prompts}
    pending = {slot: list(tokens) for slot, tokens in prompts.items()}
    out: dict[int, list[int]] = {slot: [] for slot in prompts}
    step = 0
    while any(len(out[slot]) < new_tokens for slot in prompts):
        work = [
            SlotWork(slot, pending[slot][:chunk], computed[slot], sample=len(pending[slot]) <= chunk)
            for slot in prompts
            if step >= (delays or {}).get(slot, 0) and len(out[slot]) < new_tokens
        ]
        sampled = runner.forward(work)
        for item in work:
            computed[item.slot] += len(item.tokens)
            del pending[item.slot][: len(item.tokens)]
            if item.slot in sampled:
                (token,) = sampled[item.slot]  # no drafts here: one token each
                out[item.slot].append(token)
                pending[item.slot] = [token]
        step += 1
    return out


def fresh(runner: HfRunner, *slots: int, params: SamplingParams = GREEDY) -> None:
    for slot in slots:
        runner.clear_slot(slot)
        runner.begin_turn(slot, params)


def answer_alone(runner: HfRunner, tokens: list[int], params: SamplingParams) -> str:
    """What the engine should show for one turn: stop at end-of-generation or the limit."""
    fresh(runner, 0, params=params)
    max_new_tokens = params.max_new_tokens
    detokenizer, text = runner.detokenizer(), ""
    work = [SlotWork(0, tokens, 0, True)]
    for count in range(max_new_tokens):
        token = runner.forward(work)[0][0]
        if runner.is_end_of_generation(token):
            break
        text += detokenizer.add(token)
        work = [SlotWork(0, [token], len(tokens) + count, True)]
    return text + detokenizer.flush()


def reference_varlen_attention(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: Any = None, **kwargs: Any
) -> tuple[Any, None]:
    """flash_attn_varlen_func's contract in plain torch: packed segments, causal aligned bottom-right."""
    import torch

    cu_q, cu_k = kwargs["cu_seq_lens_q"].tolist(), kwargs["cu_seq_lens_k"].tolist()
    groups = query.shape[1] // key.shape[1]
    outputs = []
    for i in range(len(cu_q) - 1):
        q = query[:, :, cu_q[i] : cu_q[i + 1]]
        k = key[:, :, cu_k[i] : cu_k[i + 1]].repeat_interleave(groups, dim=1)
        v = value[:, :, cu_k[i] : cu_k[i + 1]].repeat_interleave(groups, dim=1)
        offset = k.shape[2] - q.shape[2]
        allowed = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(diagonal=offset)
        outputs.append(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=scaling))
    return torch.cat(outputs, dim=2).transpose(1, 2).contiguous(), None
