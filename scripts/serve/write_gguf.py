"""Write a Llama-architecture GGUF with random weights and a character-level vocabulary, for serving tests.

No download: the `gguf` package writes the file. The default is tiny (a few hundred KiB, thousands of tokens/s on
one CPU core); `--preset llama-8b` has Llama-3-8B's shapes (about 16 GB in f16) for a GPU sweep whose cost is real.
Every token of the vocabulary is printable ASCII, so any sampled text is valid UTF-8 and a stream carries one
token per chunk.

    python scripts/serve/write_gguf.py --out tiny.gguf
    python scripts/serve/write_gguf.py --out llama8b.gguf --preset llama-8b
"""

from __future__ import annotations

import argparse
import string
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PRESETS = {
    # name: (embedding, layers, heads, kv heads, feed-forward, context)
    "tiny": (64, 2, 4, 2, 128, 4096),
    "small": (512, 8, 8, 4, 1536, 8192),
    "llama-8b": (4096, 32, 32, 8, 14336, 8192),
}


@dataclass(frozen=True)
class Shape:
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_ctx: int


def vocabulary() -> tuple[list[str], list[int]]:
    """<unk>, <s>, </s>; byte tokens for ASCII only (SentencePiece's fallback for newlines and other characters
    without a piece: a chat template needs them); '▁' (its space), every printable ASCII character, a few words.
    No byte above 0x7F, so whatever is sampled decodes as UTF-8 on its own."""
    import gguf

    special = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(128)]
    pieces = ["▁"] + [c for c in string.printable if c.isprintable() and c != " "]
    words = ["▁the", "▁of", "▁and", "▁to", "▁in", "▁is", "▁kernel", "▁token", "▁serve", "▁batch"]
    tokens = special + byte_tokens + pieces + words
    types = [int(gguf.TokenType.UNKNOWN), int(gguf.TokenType.CONTROL), int(gguf.TokenType.CONTROL)]
    types += [int(gguf.TokenType.BYTE)] * len(byte_tokens)
    types += [int(gguf.TokenType.NORMAL)] * (len(pieces) + len(words))
    return tokens, types


def write(out: Path, shape: Shape, dtype: str, seed: int) -> None:
    import gguf

    tokens, types = vocabulary()
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(f"hyperloom random llama {shape.n_embd}x{shape.n_layer}")
    writer.add_context_length(shape.n_ctx)
    writer.add_embedding_length(shape.n_embd)
    writer.add_block_count(shape.n_layer)
    writer.add_feed_forward_length(shape.n_ff)
    writer.add_head_count(shape.n_head)
    writer.add_head_count_kv(shape.n_head_kv)
    writer.add_rope_dimension_count(shape.n_embd // shape.n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([-float(i) for i in range(len(tokens))])
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)

    rng = np.random.default_rng(seed)
    matrix = np.float16 if dtype == "f16" else np.float32
    # One pool of random values, sliced for every matrix: a large model writes in seconds, and the work each
    # token costs is the same as with independent weights.
    n_vocab, head_dim = len(tokens), shape.n_embd // shape.n_head
    largest = max(shape.n_ff * shape.n_embd, n_vocab * shape.n_embd)
    pool = (rng.standard_normal(largest, dtype=np.float32) * 0.02).astype(matrix)

    def weights(rows: int, cols: int) -> np.ndarray:
        return pool[: rows * cols].reshape(rows, cols)

    ones = np.ones(shape.n_embd, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weights(n_vocab, shape.n_embd))
    writer.add_tensor("output_norm.weight", ones)
    # Logits spread wide enough that sampling's top-k keeps real pieces, and control tokens (which render as no
    # text) at zero, below them: a stream shows text for nearly every token.
    output = weights(n_vocab, shape.n_embd).astype(np.float32) * 25
    output[:3] = 0
    writer.add_tensor("output.weight", output.astype(matrix))
    kv = shape.n_head_kv * head_dim
    for i in range(shape.n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.attn_q.weight", weights(shape.n_embd, shape.n_embd))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weights(kv, shape.n_embd))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weights(kv, shape.n_embd))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weights(shape.n_embd, shape.n_embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(shape.n_ff, shape.n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(shape.n_ff, shape.n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(shape.n_embd, shape.n_ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the .gguf file to write")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--dtype", choices=["f32", "f16"], default=None, help="matrix type (default: f32 for tiny, f16 otherwise)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    shape = Shape(*PRESETS[args.preset])
    write(args.out, shape, args.dtype or ("f32" if args.preset == "tiny" else "f16"), args.seed)
    print(args.out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
