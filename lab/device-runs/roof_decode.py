"""Issue 46 by hand, in one process on one GPU: a Llama-3.2-1B-shaped decoder (bf16, random weights, tied embeddings)
decoding greedily on the static cache through Hyperloom's decode_loop, per stack of model levers (none, fuse_projections,
int8_weight_only, fp8_weight_only, fused + int8, decode_attention, each optionally with Inductor's coordinate-descent tuning;
fused+argmax1: decode_loop's one-pass argmax, the two-pass one's A/B) and per batch: ms a decode token ((T(N) - T(1)) / (N - 1), medians of
synchronized repeats), its percent of the bytes roof (the weights as stored plus the mean filled KV cache read once a
token, at the device-copy bandwidth measured in this process; and against the plain stack's roof, issue 46's, with
the bf16 weights), tokens equal to the plain stack's, and the replayed
graph's attribution (profile's replays.py) for one generate of N tokens. What the campaign keeps is judged by the gate;
this says how far each stack is from the roof and where its token goes.

    python3 lab/device-runs/roof_decode.py OUT [--batches 1,8,32] [--tokens 64] [--stacks plain,fused,int8,fused+int8]
    python3 lab/device-runs/roof_decode.py OUT --small        # a 2-layer model on the CPU: the script's own check

Writes OUT/roof_decode.json and prints a table.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import statistics
import time
from pathlib import Path

import torch
import torch._inductor.config as inductor_config
from transformers import LlamaConfig, LlamaForCausalLM

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.tools.profile.kineto import trace_of
from hyperloom.tools.profile.models import ReplayRoof
from hyperloom.tools.profile.replays import attribute_replays
from hyperloom.tools.workload.worker.levers import decode_attention, decode_gemv, decode_loop, fused_projections, kernel_route, weight_only

LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                vocab_size=128256)
SMALL = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
PROMPT = 128
STACKS = {"plain": (), "fused": ("fuse",), "int8": ("int8",), "fp8": ("fp8",), "fused+int8": ("fuse", "int8"),
          "fused+int8+cd": ("fuse", "int8", "cd"), "fused+cd": ("fuse", "cd"), "fused+argmax1": ("fuse", "argmax1"),
          "fused+attn": ("fuse", "attn"), "fused+attn+cd": ("fuse", "attn", "cd"), "attn": ("attn",),
          "fused+attn+gemv": ("fuse", "attn", "gemv"), "fused+attn+gemv-nofold": ("fuse", "attn", "gemv", "nofold"),
          "fused+gemv": ("fuse", "gemv"), "fused+attn+gemv-act": ("fuse", "attn", "gemv", "nofold", "act"),
          "fused+attn+combo": ("fuse", "attn", "combo"), "fused+attn+gemv-act+combo": ("fuse", "attn", "gemv", "nofold", "act", "combo"),
          "attn+gemv-act+combo": ("attn", "gemv", "nofold", "act", "combo"),
          "fused+attn+gemv-act-few+combo": ("fuse", "attn", "gemv", "nofold", "act", "few", "combo")}
# cd: Inductor's coordinate-descent tuning for the stack's compiles; argmax1: decode_loop's one-pass argmax (the two-pass
# one's A/B); attn: the decode_attention lever; gemv: the decode_gemv lever (its launch params from --gemv-params;
# nofold: without folding the RMSNorms into it; act: the MLPs' activation folded into the down projection's GEMV;
# combo: Inductor's combo kernels, independent small kernels of a graph launched as one; few: decode_gemv's few-row tile
# for calls of 2-8 rows, cuBLAS's otherwise)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


@functools.cache
def base_model(shape_items: tuple, device: str) -> LlamaForCausalLM:
    """The model with its random weights, made once (a 1.2B model's initialisation takes seconds; a copy on the GPU does not)."""
    torch.manual_seed(0)
    config = LlamaConfig(**dict(shape_items), max_position_embeddings=4096, tie_word_embeddings=True, rope_theta=500000.0)
    return LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16).eval()


def build(shape: dict, stack: tuple[str, ...], device: str) -> LlamaForCausalLM:
    model = copy.deepcopy(base_model(tuple(sorted(shape.items())), device))
    model.generation_config.cache_implementation = "static"
    model.generation_config.eos_token_id = None  # random weights: no early stop, every token counted
    if "fuse" in stack:
        fused_projections.fuse(torch, model)
    for form in ("int8", "fp8"):
        if form in stack:
            weight_only.quantize(torch, model, form)
    if "attn" in stack:
        decode_attention.route(torch, model)
    if "gemv" in stack:
        decode_gemv.FOLD_NORMS = "nofold" not in stack  # the fold on, unless asked off
        decode_gemv.FOLD_ACTS = "act" in stack
        decode_gemv.FEW_ROWS = "few" in stack
        decode_gemv.route(torch, model)
    decode_loop.ARGMAX_CHUNK = 0 if "argmax1" in stack else 1024  # read when the step compiles, below
    decode_loop.install(model, compiled=device == "cuda")
    return model


def stored_bytes(model: torch.nn.Module) -> int:
    """The weights a token reads, as stored: parameters and the narrow weights' buffers (each tensor once)."""
    seen = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.dim() >= 1 and tensor.numel() > 1024:
            seen[tensor.data_ptr()] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


def kv_bytes(config: LlamaConfig, batch: int, tokens: int) -> int:
    """The KV cache a mean decode token reads: the filled part, the prompt and half the new tokens."""
    head_dim = config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * (PROMPT + tokens // 2) * batch * 2


def copy_bandwidth_gb_s(device: str) -> float:
    """A device copy of 1 GiB (64 MiB on a CPU), read and written: bytes moved over the median time."""
    size = (1 << 30) if device == "cuda" else (64 << 20)
    source, target = torch.empty(size, dtype=torch.uint8, device=device), torch.empty(size, dtype=torch.uint8, device=device)
    times = []
    for _ in range(10):
        sync(device)
        started = time.perf_counter()
        target.copy_(source)
        sync(device)
        times.append(time.perf_counter() - started)
    return 2 * size / statistics.median(times[2:]) / 1e9


def generate(model: LlamaForCausalLM, prompt: torch.Tensor, tokens: int) -> torch.Tensor:
    with torch.inference_mode():
        return model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                              pad_token_id=0)


def per_token_ms(model: LlamaForCausalLM, prompt: torch.Tensor, tokens: int, repeats: int, device: str) -> tuple[float, list[float]]:
    """(T(tokens) - T(1)) / (tokens - 1) from medians of alternating synchronized runs, and the per-pair figures."""
    pairs = []
    for _ in range(repeats):
        spans = []
        for count in (1, tokens):
            sync(device)
            started = time.perf_counter()
            generate(model, prompt, count)
            sync(device)
            spans.append(time.perf_counter() - started)
        pairs.append((spans[1] - spans[0]) / (tokens - 1) * 1e3)
    return statistics.median(pairs), pairs


def attribution(model: LlamaForCausalLM, prompt: torch.Tensor, tokens: int, roof: ReplayRoof, device: str) -> dict | None:
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        generate(model, prompt, tokens)
        sync(device)
    trace = trace_of(prof)
    found = attribute_replays(trace, roof) if trace is not None else None
    return None if found is None else found.model_dump(mode="json")


def main(args: argparse.Namespace) -> None:
    device = "cpu" if args.small else "cuda"
    if args.gemv_params:  # the sweep's winners, per (N, K)
        best = json.loads(Path(args.gemv_params).read_text())["best"]
        kernel_route.launcher(torch, "gemv").TUNED.update({tuple(int(v) for v in key.split(",")): params for key, params in best.items()})
    shape = SMALL if args.small else LLAMA_1B
    bandwidth = copy_bandwidth_gb_s(device)
    rows = []
    meta = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
            "copy_bandwidth_gb_s": bandwidth, "tokens": args.tokens, "prompt": PROMPT, "shape": shape}
    for batch in [int(b) for b in args.batches.split(",")]:
        prompt = torch.randint(0, shape["vocab_size"], (batch, PROMPT), device=device, generator=None)
        plain_tokens, plain_roof_ms = None, None
        for name in args.stacks.split(","):
            started = time.perf_counter()
            inductor_config.coordinate_descent_tuning = "cd" in STACKS[name]  # process-wide: set per stack, before its compile
            inductor_config.combo_kernels = "combo" in STACKS[name]
            torch._dynamo.reset()
            model = build(shape, STACKS[name], device)
            first = generate(model, prompt, args.tokens)  # warm-up: compiles and captures
            build_s = time.perf_counter() - started
            ms, pairs = per_token_ms(model, prompt, args.tokens, args.repeats, device)
            weights = stored_bytes(model)
            token_bytes = weights + kv_bytes(model.config, batch, args.tokens)
            roof_ms = token_bytes / (bandwidth * 1e9) * 1e3
            # issue 46's roof: the bf16 weights and the KV cache, whatever a stack stores
            if plain_roof_ms is None and not {"int8", "fp8"} & set(STACKS[name]):
                plain_roof_ms = roof_ms
            roof = ReplayRoof(bytes_per_replay=token_bytes, bandwidth_gb_s=bandwidth,
                              source="MEASURED: this process's device copy; the weights as stored plus the mean filled KV cache")
            if plain_tokens is None:  # the first stack's tokens: what the others are compared with
                plain_tokens = first
            same = None if plain_tokens is None else float((first[:, PROMPT:] == plain_tokens[:, PROMPT:]).float().mean())
            found = attribution(model, prompt, args.tokens, roof, device) if args.attribute else None
            rows.append({"batch": batch, "stack": name, "ms_per_token": ms, "pairs_ms": pairs, "roof_ms": roof_ms,
                         "roof_percent": 100 * roof_ms / ms,
                         "bf16_roof_percent": None if plain_roof_ms is None else 100 * plain_roof_ms / ms,
                         "weight_bytes": weights, "token_bytes": token_bytes, "tokens_equal_to_plain": same, "build_and_warmup_s": build_s,
                         "attribution": found})
            bf16 = f", {100 * plain_roof_ms / ms:5.1f} % of plain's" if plain_roof_ms else ""
            print(f"batch {batch:>3} {name:<14} {ms:7.3f} ms/token  roof {roof_ms:6.3f} ms ({100 * roof_ms / ms:5.1f} %{bf16})  weights "
                  f"{weights / 1e9:.2f} GB  "
                  f"tokens = first's {same if same is None else round(same, 3)}  built+warm {build_s:.0f} s", flush=True)
            if found:
                top = ", ".join(f"{k['name'][:40]} {k['us']:.0f} us" for k in found["kernels"][:4])
                print(f"    {found['kernels_per_replay']} kernels a token; busy {found['graph_busy_us']:.0f} us, gaps "
                      f"{found['graph_gaps_us']:.0f}, "
                      f"outside {found['outside_kernels_us']:.0f}, idle {found['idle_us']:.0f} of {found['period_us']:.0f} us; by class "
                      f"{ {k: round(v) for k, v in found['classes_us'].items()} }; top: {top}", flush=True)
            del model
            if device == "cuda":
                torch.cuda.empty_cache()
            write(Path(args.out), meta, rows)  # after each row: a command cut at its limit keeps the rows it measured
    print(f"copy bandwidth {bandwidth:.0f} GB/s (MEASURED here); wrote {Path(args.out) / 'roof_decode.json'}")


def write(out: Path, meta: dict, rows: list[dict]) -> None:
    write_bytes_atomic(out / "roof_decode.json", json.dumps({"meta": meta, "rows": rows}, indent=1).encode())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--batches", default="1")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stacks", default="plain,fused,int8,fused+int8")
    parser.add_argument("--gemv-params", help="gemv_sweep.py's JSON: the GEMV's launch params per shape")
    parser.add_argument("--attribute", action="store_true", help="profile one generate per stack and attribute its replays")
    main(parser.parse_args())
