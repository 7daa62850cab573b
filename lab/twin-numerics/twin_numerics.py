"""How far do honest and wrong candidates stray from the model's float32 twin, relative to the eager baseline's own
stray? The numbers a twin gate needs: the gate accepts a candidate when err(candidate, twin) <= k * err(eager, twin),
where the twin is the same model with the baseline's weights upcast to float32 (float64 with --twin-dtype float64, the
default on a CPU), run on the same inputs. Per workload, every candidate's output is compared with the twin's in float64:

    rel_l2        ||c - t|| / ||t||
    max_abs       max|c - t| / max|t|
    top8_logprob  (decoder) the largest |log_softmax(c) - log_softmax(t)| at the twin's top-8 ids, all rows and positions (nats)
    argmax        (decoder) the share of positions whose argmax is the twin's

and the ratio to the eager baseline's error under each measure (argmax: the ratio of the miss shares). Workloads, random
weights (torch.manual_seed(0)), built as a user would write them:

    decoder  LlamaForCausalLM shaped like Llama-3.2-1B, bf16, logits of every position of one forward over 2 x 128 tokens
    encoder  BertModel, bert-base shape, fp16, last_hidden_state of 32 x 256 tokens
    conv     torchvision resnet50, fp16, logits of 64 x 3 x 224 x 224 (without torchvision: a small Conv/BN/ReLU residual net)

Honest candidates: eager again (ratio 1, its absolute errors are the baseline's), torch.compile default and
"max-autotune-no-cudagraphs" (GPU), each SDPA backend (decoder, encoder), cudnn.benchmark (conv, GPU), channels_last (conv).
Wrong ones: one middle layer's MLP output (conv: one middle block's residual branch) x1.01 / x1.03 / x1.10, that layer
(block) skipped, a truncated input (decoder: first token dropped, the last positions compared; encoder: the last 10 % of
the attention mask zeroed; conv: a border of the image zeroed), int8 and fp8-e4m3 weight-only (per-output-channel absmax
round trip of every Linear and Conv2d weight). A candidate that fails records its error. The summary per measure: the
largest honest ratio and the smallest wrong one (a k exists between them). Also the median forward time and the first
call's time (the compile). results.json and results.md are rewritten after every candidate, so a killed run keeps its rows.

    python3 lab/twin-numerics/twin_numerics.py OUT [--workloads decoder,encoder,conv] [--budget 360] [--autotune decoder,encoder,conv]
    [--no-compile] python3 lab/twin-numerics/twin_numerics.py /tmp/twin_out --quick          # CPU smoke: tiny sizes, bf16, float64 twin

The workloads run one after the other (the twin freed once its output is taken, compiled graphs reset, the cache
emptied); the max-autotune compiles, the slow ones, come last in a second pass, each only if about three times its
workload's default compile time is left of --budget (seconds, whole run); a workload's default compile is skipped once
its equal share of the budget is spent. --no-compile skips every compile (a CPU's inductor compiles take a while:
--quick takes about a minute with them on two cores, 20 s without).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

MEASURES = ("rel_l2", "max_abs", "top8_logprob", "argmax_miss")
SCALES = (1.01, 1.03, 1.10)


@dataclass
class Workload:
    name: str
    model: nn.Module  # the baseline, in the workload's dtype
    twin: nn.Module  # the same weights upcast
    inputs: dict
    truncated: dict  # the inputs of the truncated-input candidate
    mlp: nn.Module  # a middle layer's MLP output module (conv: the block's residual branch end)
    layer: nn.Module  # a middle layer (block) whose output is its hidden input when skipped
    attention: bool
    logits: bool  # decoder measures
    config: dict = field(default_factory=dict)
    reference: torch.Tensor | None = None  # the twin's output
    base: dict | None = None  # the eager baseline's errors

    def run(self, model: nn.Module, inputs: dict | None = None) -> torch.Tensor:
        out = model(**(self.inputs if inputs is None else inputs))
        return getattr(out, "logits", None) if self.logits else getattr(out, "last_hidden_state", out)


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def build_decoder(quick, dtype, device):
    from transformers import LlamaConfig, LlamaForCausalLM
    shape = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=512,
                 vocab_size=1024) if quick else \
        dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, intermediate_size=8192,
             vocab_size=128256)
    config = LlamaConfig(**shape, tie_word_embeddings=True, max_position_embeddings=2048, rope_theta=500000.0)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, attn_implementation="sdpa")
    ids = torch.randint(0, config.vocab_size, (2, 32 if quick else 128), device=device)
    mid = model.model.layers[config.num_hidden_layers // 2]
    return model, {"input_ids": ids}, {"input_ids": ids[:, 1:]}, mid.mlp, mid, True, True, shape


def build_encoder(quick, dtype, device):
    from transformers import BertConfig, BertModel
    shape = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512) if quick else \
        dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
    config = BertConfig(**shape)
    with torch.device(device):
        model = BertModel._from_config(config, attn_implementation="sdpa", add_pooling_layer=False)
    batch, seq = (4, 32) if quick else (32, 256)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device=device)
    mask = torch.ones_like(ids)
    cut = mask.clone()
    cut[:, seq - seq // 10:] = 0
    mid = model.encoder.layer[config.num_hidden_layers // 2]
    return model, {"input_ids": ids, "attention_mask": mask}, {"input_ids": ids,
                                                               "attention_mask": cut}, mid.output.dense, mid, True, False, shape


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width))

    def forward(self, x):
        return torch.relu(x + self.body(x))


class SmallNet(nn.Module):
    """The conv net when torchvision is missing: a Conv/BN/ReLU stem, four residual blocks, a pooled linear head."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(*[Block(width) for _ in range(4)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def build_conv(quick, dtype, device):
    try:
        import torchvision
        model, kind = torchvision.models.resnet50(weights=None), "resnet50"
        block = model.layer3[len(model.layer3) // 2]
        branch_end = block.bn3
    except ImportError:
        model, kind = SmallNet(), "SmallNet (no torchvision)"
        block = model.blocks[2]
        branch_end = block.body[-1]
    model = model.to(device)
    side = 32 if quick else 224
    x = torch.randn(4 if quick else 64, 3, side, side, device=device)
    for m in model.modules():  # BatchNorm's running statistics from one training-mode pass, as a trained net's would normalize
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = 1.0
    with torch.no_grad():
        model.train()(x)
    b = max(1, side // 28)
    cropped = torch.zeros_like(x)
    cropped[..., b:-b, b:-b] = x[..., b:-b, b:-b]
    return model, {"x": x}, {"x": cropped}, branch_end, block, False, False, {"net": kind, "input": list(x.shape)}


BUILDERS = {"decoder": build_decoder, "encoder": build_encoder, "conv": build_conv}


def make(name, quick, dtype, twin_dtype, device) -> Workload:
    torch.manual_seed(0)
    model, inputs, truncated, mlp, layer, attention, logits, config = BUILDERS[name](quick, dtype, device)
    model = model.to(dtype).eval()
    twin = copy.deepcopy(model).to(twin_dtype)

    def cast(d):  # float inputs (the image) in the model's dtype; ids and masks unchanged
        return {k: v.to(dtype) if v.is_floating_point() else v for k, v in d.items()}
    return Workload(name, model, twin, cast(inputs), cast(truncated), mlp, layer, attention, logits, {**config, "dtype": str(dtype)})


def errors(c: torch.Tensor, t: torch.Tensor, logits: bool) -> dict:
    c, t = c.double(), t.double()
    if c.shape != t.shape:  # the truncated decoder prompt: its positions are the twin's last ones
        t = t[:, -c.shape[1]:]
    d = c - t
    out = {"rel_l2": (d.norm() / t.norm()).item(), "max_abs": (d.abs().max() / t.abs().max()).item()}
    if logits:
        ids = t.topk(8, dim=-1).indices
        lc, lt = torch.log_softmax(c, -1).gather(-1, ids), torch.log_softmax(t, -1).gather(-1, ids)
        out["top8_logprob"] = (lc - lt).abs().max().item()
        out["argmax"] = (c.argmax(-1) == t.argmax(-1)).double().mean().item()
        out["argmax_miss"] = 1.0 - out["argmax"]
    return out


@contextlib.contextmanager
def hooked(module: nn.Module, hook, **kwargs):
    handle = module.register_forward_hook(hook, **kwargs)
    try:
        yield
    finally:
        handle.remove()


def skip_hook(module, args, kwargs, output):
    hidden = args[0] if args else kwargs["hidden_states"]
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


def weight_only(model: nn.Module, fmt: str) -> nn.Module:
    """A copy with every Linear and Conv2d weight rounded per output channel (symmetric absmax) to int8 or fp8-e4m3 and back."""
    copy_ = copy.deepcopy(model)
    with torch.no_grad():
        for m in copy_.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                w = m.weight.float()
                amax = w.abs().amax(dim=tuple(range(1, w.ndim)), keepdim=True).clamp_min(1e-12)
                if fmt == "int8":
                    scale = amax / 127
                    back = (w / scale).round().clamp(-127, 127) * scale
                else:
                    scale = amax / torch.finfo(torch.float8_e4m3fn).max
                    back = (w / scale).to(torch.float8_e4m3fn).float() * scale
                m.weight = nn.Parameter(back.to(m.weight.dtype), requires_grad=False)  # unties a tied lm_head, as a quantizer would
    return copy_


def candidates(w: Workload, gpu: bool, compile_: bool, autotune: bool = False) -> list[tuple[str, str, Callable]]:
    """(name, honest|wrong, factory): the factory is a context manager that yields a no-argument forward. autotune: only
    the max-autotune compile (run in a second pass, with what is left of the budget)."""
    def plain(model=None, inputs=None):
        return contextlib.nullcontext(lambda: w.run(w.model if model is None else model, inputs))

    @contextlib.contextmanager
    def compiled(mode):
        fn = torch.compile(w.model, mode=mode)
        try:
            yield lambda: w.run(fn)
        finally:
            torch._dynamo.reset()

    @contextlib.contextmanager
    def sdpa(backend):
        with sdpa_kernel(backend):
            yield lambda: w.run(w.model)

    @contextlib.contextmanager
    def with_hook(module, hook, **kwargs):
        with hooked(module, hook, **kwargs):
            yield lambda: w.run(w.model)

    @contextlib.contextmanager
    def benchmark():
        torch.backends.cudnn.benchmark = True
        try:
            yield lambda: w.run(w.model)
        finally:
            torch.backends.cudnn.benchmark = False

    def copied(model, inputs=None):  # the copy goes with the forward once the row is done
        return contextlib.nullcontext(lambda: w.run(model, inputs))

    if autotune:
        return [("compile max-autotune-no-cudagraphs", "honest", lambda: compiled("max-autotune-no-cudagraphs"))]
    out = [("eager", "honest", plain)]
    if compile_:
        out.append(("compile default", "honest", lambda: compiled(None)))
    if w.attention:
        for b in ("MATH", "EFFICIENT_ATTENTION", "FLASH_ATTENTION", "CUDNN_ATTENTION"):
            out.append((f"sdpa {b}", "honest", lambda b=b: sdpa(getattr(SDPBackend, b))))
    else:
        if gpu:
            out.append(("cudnn.benchmark", "honest", benchmark))
        out.append(("channels_last", "honest", lambda: copied(copy.deepcopy(w.model).to(memory_format=torch.channels_last),
                                                               {"x": w.inputs["x"].contiguous(memory_format=torch.channels_last)})))
    what = "MLP output" if w.attention else "block residual branch"
    for s in SCALES:
        out.append((f"{what} x{s}", "wrong", lambda s=s: with_hook(w.mlp, lambda m, a, o, s=s: o * s)))
    out.append(("layer skipped" if w.attention else "block skipped", "wrong", lambda: with_hook(w.layer, skip_hook, with_kwargs=True)))
    out.append(("truncated input", "wrong", lambda: plain(inputs=w.truncated)))
    out.append(("int8 weight-only", "wrong", lambda: copied(weight_only(w.model, "int8"))))
    if hasattr(torch, "float8_e4m3fn"):
        out.append(("fp8-e4m3 weight-only", "wrong", lambda: copied(weight_only(w.model, "fp8"))))
    return out


def timed(fn) -> tuple[torch.Tensor, float]:
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, (time.perf_counter() - t0) * 1e3


def separation(rows: list[dict]) -> dict:
    sep = {}
    for m in MEASURES:
        honest = [r["ratio"][m] for r in rows if r["kind"] == "honest" and r.get("ratio", {}).get(m) is not None]
        wrong = [r["ratio"][m] for r in rows if r["kind"] == "wrong" and r.get("ratio", {}).get(m) is not None]
        if honest and wrong:
            sep[m] = {"max_honest": max(honest), "min_wrong": min(wrong), "separates": max(honest) < min(wrong)}
    return sep


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def table(name: str, result: dict) -> str:
    cols = ["rel_l2", "max_abs", "top8_logprob", "argmax"] if result["logits"] else ["rel_l2", "max_abs"]
    ratios = [m for m in MEASURES if result["logits"] or m in ("rel_l2", "max_abs")]
    head = ["candidate", "kind", *cols, *[f"x {m}" for m in ratios], "ms", "first ms", "error"]
    lines = [f"### {name}: {json.dumps(result['config'])}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["rows"]:
        e, q = r.get("errors", {}), r.get("ratio", {})
        cells = [r["name"], r["kind"], *[fmt(e.get(c)) for c in cols], *[fmt(q.get(m)) for m in ratios], fmt(r.get("ms"), 4),
                 fmt(r.get("first_ms"), 4), r.get("error", "")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for m, s in result["separation"].items():
        lines.append(f"- {m}: largest honest ratio {s['max_honest']:.3g}, smallest wrong ratio "
                     f"{s['min_wrong']:.3g}{'' if s['separates'] else ' (overlap)'}")
    return "\n".join(lines) + "\n"


def write(out: Path, results: dict):
    (out / "results.json").write_text(json.dumps(results, indent=1))
    env = results["env"]
    md = [f"# Twin numerics: {env['device']}, torch {env['torch']}, transformers {env['transformers']}, twin {env['twin_dtype']}", "",
          "Errors against the twin (float64 arithmetic); `x m` = candidate error / eager baseline error under m (argmax: miss share).", ""]
    md += [table(n, r) for n, r in results["workloads"].items()]
    (out / "results.md").write_text("\n".join(md))


def reference(w: Workload, gpu: bool):
    """The twin's output on the same inputs (float ones upcast), attention in SDPA's math backend; the twin is then freed."""
    dtype = next(w.twin.parameters()).dtype
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        w.reference = w.run(w.twin, {k: v.to(dtype) if v.is_floating_point() else v for k, v in w.inputs.items()}).detach()
    w.twin = None
    if gpu:
        torch.cuda.empty_cache()


def measure(w: Workload, rows: list, args, deadline: float, results: dict, out: Path):
    """Runs each candidate: first call (the compile, if any), median of --reps timed calls, errors against the twin."""
    result = results["workloads"].setdefault(w.name, {"config": w.config, "logits": w.logits, "rows": [], "separation": {}})
    for name, kind, factory in rows:
        row = {"name": name, "kind": kind}
        if name.startswith("compile") and time.monotonic() > deadline:
            row["error"] = "skipped: not enough of --budget left"
        else:
            try:
                with torch.no_grad(), factory() as fn:
                    _, row["first_ms"] = timed(fn)
                    row["ms"] = statistics.median(timed(fn)[1] for _ in range(args.reps))
                    row["errors"] = errors(fn(), w.reference, w.logits)
            except Exception as e:  # a failing candidate is a result
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
        if name == "eager":
            w.base = row.get("errors")
        if w.base and "errors" in row:
            row["ratio"] = {m: row["errors"][m] / w.base[m] if w.base.get(m) else None for m in MEASURES if m in row["errors"]}
        result["rows"].append(row)
        result["separation"] = separation(result["rows"])
        e = row.get("errors", {})
        print(f"  {name:40s} {kind:6s} rel_l2 {fmt(e.get('rel_l2'))} max_abs {fmt(e.get('max_abs'))} "
              f"ratio {fmt(row.get('ratio', {}).get('rel_l2'))} ms {fmt(row.get('ms'), 4)} first {fmt(row.get('first_ms'), 4)} "
              f"{row.get('error', '')}", flush=True)
        write(out, results)
    print(table(w.name, result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for results.json and results.md")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, bf16 everywhere (a CPU smoke test)")
    parser.add_argument("--workloads", default="decoder,encoder,conv")
    parser.add_argument("--twin-dtype", choices=("float32", "float64"), help="default: float32 on a GPU, float64 on a CPU")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile candidates")
    parser.add_argument("--budget", type=float, default=360.0, help="seconds for the whole run (see above)")
    parser.add_argument("--autotune", default="decoder,encoder,conv", help="workloads that get the max-autotune compile (GPU, not --quick)")
    parser.add_argument("--reps", type=int, default=None, help="timed forwards per candidate (default 5, 2 with --quick)")
    args = parser.parse_args()
    args.reps = args.reps or (2 if args.quick else 5)
    start = time.monotonic()
    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    twin_dtype = getattr(torch, args.twin_dtype or ("float32" if gpu else "float64"))
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 twin in full float32 (convs too)
    torch.backends.cudnn.allow_tf32 = False
    import transformers
    try:
        import torchvision
        vision = torchvision.__version__
    except ImportError:
        vision = None
    args.out.mkdir(parents=True, exist_ok=True)
    results = {"env": {"device": torch.cuda.get_device_name() if gpu else "cpu", "torch": torch.__version__, "cuda": torch.version.cuda,
                       "transformers": transformers.__version__, "torchvision": vision, "twin_dtype": str(twin_dtype)},
               "args": {k: str(v) for k, v in vars(args).items()}, "workloads": {}}
    names = args.workloads.split(",")
    kept = []  # pass 1: everything but max-autotune, the default compile within the workload's share of the budget
    for i, name in enumerate(names):
        dtype = torch.bfloat16 if args.quick or not gpu or name == "decoder" else torch.float16
        print(f"== {name} ({dtype}, twin {twin_dtype}) at {time.monotonic() - start:.0f} s", flush=True)
        w = make(name, args.quick, dtype, twin_dtype, device)
        reference(w, gpu)
        measure(w, candidates(w, gpu, not args.no_compile), args, start + args.budget * (i + 1) / len(names), results, args.out)
        torch._dynamo.reset()
        if gpu:
            torch.cuda.empty_cache()
        if gpu and not args.quick and not args.no_compile and name in args.autotune.split(","):
            kept.append(w)  # the baseline (a few GB at most) and the twin's output stay for pass 2
        del w
    for w in kept:  # pass 2: max-autotune, if about 3 default compiles' time is left before the budget's end
        first = next((r.get("first_ms") for r in results["workloads"][w.name]["rows"] if r["name"] == "compile default"), None)
        print(f"== {w.name}, max-autotune at {time.monotonic() - start:.0f} s", flush=True)
        measure(w, candidates(w, gpu, True, autotune=True), args, start + args.budget - 3 * (first or 30e3) / 1e3, results, args.out)
        w.model = w.reference = None
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    print(f"done in {time.monotonic() - start:.0f} s: {args.out / 'results.json'}", flush=True)


if __name__ == "__main__":
    main()
