"""Worker side: the model's numerics beside the step, for the gate's twin rule (tools/workload/gate/twin.py). Teacher
forcing: the logits a workload's model gives a given token sequence in one forward (the reference's tokens scored by
the candidate's model, so a parting at a near tie does not end the comparison; a candidate's own continuation scored
by the reference's model). Upcasting: the workload's floating tensors as float32/float64, for its twin. Called by
runner.outputs, runner.score and runner.twin, never on the timed path.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from hyperloom.tools.workload.worker.levers.decode_loop import not_greedy, padded_inputs, padding_mask

GENERATE_INPUTS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""A model -> the input of its last generate call: an encoder-decoder's encoder input (its main input, attention_mask),
a decoder's prompt (input_ids, attention_mask)."""


BUILT_INPUTS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""A model -> a copy of the input of its first generate call: the workload's inputs as built, before any inputs(seed)
wrote new ones in place. A candidate's first outputs come from them, so the reference's worker scores that candidate's
continuation beside them (an encoder-decoder's tokens were not scored at all there: its last inputs may not be theirs)."""

Source = Literal["last", "built"]
"""Which recorded generate input teacher forcing puts beside the tokens: the last call's (the worker's own step just
before) or the first call's (the inputs as built)."""


GENERATE_KWARGS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""A model -> the keyword arguments of its last generate call, read by `not_greedy_last` off the timed path."""


def not_greedy_last(model: Any) -> str | None:
    """Why `model`'s last generate call did not pick each token as the argmax of its raw logits (decode_loop.not_greedy;
    None: it did, or no generate was recorded): the near-tie gate judges greedy decoding only (freeze refuses otherwise)."""
    kwargs = GENERATE_KWARGS.get(model)
    return None if kwargs is None else not_greedy(model, kwargs, bans_too=False)


def record_generate_inputs(model: Any) -> None:
    """Keep the input of each generate call of `model` (GENERATE_INPUTS), so the tokens it generated can be
    teacher-forced as generate ran them: an encoder-decoder's decoder tokens beside the encoder input they came from (its
    main input, `main_input_name`: a text model's input_ids, Whisper's input_features, a vision encoder's pixel_values),
    a decoder's left-padded prompt with its attention mask. An input given as embeddings is not recorded (an
    encoder-decoder's tokens are then not scored). Wraps the instance's generate around every lever (applied last: the
    decode loop replaces generate and would not call a recorder under it); a no-op on a model without generate."""
    if not callable(getattr(model, "generate", None)):
        return
    original = model.generate
    main = _main_input(model)

    @functools.wraps(original)
    def generate(inputs: Any = None, **kwargs: Any) -> Any:
        given = kwargs.get(main) if inputs is None else inputs
        GENERATE_KWARGS[model] = dict(kwargs)
        if getattr(given, "dim", lambda: 0)() >= 2:
            GENERATE_INPUTS[model] = {main: given, "attention_mask": kwargs.get("attention_mask")}
            if model not in BUILT_INPUTS:  # the first call: a warm-up on the inputs as built (copied: inputs(seed) writes in place)
                BUILT_INPUTS[model] = {name: None if value is None else value.clone() for name, value in GENERATE_INPUTS[model].items()}
        else:
            GENERATE_INPUTS.pop(model, None)
        return original(inputs, **kwargs)

    model.generate = generate


def _encoder_decoder(model: Any) -> bool:
    return bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))


def _main_input(model: Any) -> str:
    """The generate input GENERATE_INPUTS keeps under its own name: an encoder-decoder's main input, a decoder's input_ids."""
    return getattr(model, "main_input_name", "input_ids") if _encoder_decoder(model) else "input_ids"


def logits(torch: Any, model: Any, requests: dict[str, Any] | None, context: Callable[[], AbstractContextManager[Any]],
           compiled: bool, source: Source | None = "last") -> dict[str, Any]:
    """tokens name -> the logits `model` gives those tokens (`requests`: name -> {ids, prompt}), for each it can score.
    `source`: the recorded generate input the tokens came from ("last": the worker's own step just before; "built": the
    workload's inputs as built, a candidate's first outputs; None: not known, so an encoder-decoder's are not scored)."""
    found = {}
    for tokens, asked in (requests or {}).items():
        scored = forced(torch, model, asked["ids"], int(asked["prompt"]), context, compiled, source)
        if scored is not None:
            found[tokens] = scored
    return found


def forced(torch: Any, model: Any, ids: list[list[int]], prompt: int, context: Callable[[], AbstractContextManager[Any]], compiled: bool,
           source: Source | None = "last") -> Any:
    """The logits `model` gives the generated positions of `ids` (one forward over the whole sequence, inside
    `context()`), in the model's dtype; None where the model takes no input_ids or returns no logits. An encoder-decoder's
    tokens are its decoder's: scored as decoder_input_ids beside the encoder input recorded from `source` (the
    same rows), None without one (T5 raised on the decoder's tokens as its input_ids; BART took them as its encoder's,
    silently). A decoder's left-padded prompt is scored with its recorded mask (_padded_prompt). A `compiled` model runs
    its compiled code where it has some for this call and eagerly where it would compile anew: the whole sequence in one
    call is a shape no step ran, and compiling it costs a good share of a trial (docs/decisions.md: The teacher's
    compiled forward); the compiled numerics are gated on the generated steps' log-probabilities and in the pairs."""
    if prompt < 1:
        return None
    device = next(model.parameters()).device
    inputs: dict[str, Any] = {"input_ids": torch.tensor(ids, device=device)}
    recorded = {"last": GENERATE_INPUTS, "built": BUILT_INPUTS}[source].get(model) if source else None
    if _encoder_decoder(model):
        if recorded is None or recorded[_main_input(model)].shape[0] != len(ids):
            return None
        inputs = {**{name: None if value is None else value.to(device) for name, value in recorded.items()},
                  "decoder_input_ids": inputs["input_ids"]}
    else:
        inputs.update(_padded_prompt(torch, model, recorded, inputs["input_ids"], prompt))
    extra = {"use_cache": False} if "use_cache" in inspect.signature(model.forward).parameters else {}
    stance = torch.compiler.set_stance("eager_on_recompile") if compiled and hasattr(torch.compiler, "set_stance") else nullcontext()
    with torch.inference_mode(), context(), stance:
        result = model(**inputs, **extra)
    out = getattr(result, "logits", None)
    return None if out is None else out[:, prompt - 1:-1]


def _padded_prompt(torch: Any, model: Any, recorded: dict[str, Any] | None, ids: Any, prompt: int) -> dict[str, Any]:
    """A decoder's attention mask and position ids for `ids` whose prompt generate ran left-padded (a batch of prompts of
    unequal lengths): the recorded mask of that prompt, ones after it, the positions counted from each row's first real
    token (as generate counts them). Empty where the prompt was not padded or is not the recorded one (ids compared):
    without them a padded row attends to its pads at shifted positions (a held-out Llama's padded row: logits 3.3 apart
    from generate's own, its honest partings refused). A model whose forward takes no position ids gets the mask alone."""
    mask = None if recorded is None else padding_mask(recorded.get("attention_mask"))
    given = None if recorded is None else recorded.get("input_ids")
    if mask is None or given is None or tuple(given.shape) != (ids.shape[0], prompt):
        return {}
    if not torch.equal(given.to(ids.device), ids[:, :prompt]):
        return {}
    whole, positions = padded_inputs(torch, mask.to(ids.device), ids.shape[1])  # as the decode loop gives a padded batch
    found = {"attention_mask": whole}
    if "position_ids" in inspect.signature(model.forward).parameters:
        found["position_ids"] = positions
    return found


def upcast(torch: Any, value: Any, dtype: Any) -> Any:
    """Floating tensors in `value` (a tensor, or a list, tuple or dict of them, one level) as `dtype`; the rest as it is."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(upcast(torch, v, dtype) if isinstance(v, torch.Tensor) else v for v in value)
    if isinstance(value, dict):
        return {k: upcast(torch, v, dtype) if isinstance(v, torch.Tensor) else v for k, v in value.items()}
    return value


def twin_dtypes(torch: Any, floats: set[Any], gpu: bool) -> list[Any]:
    """The dtypes a twin is tried in, widest first, for a model whose floating parameters are in `floats`: float64 on
    a CPU; on a GPU float32 for a model in a narrower float (float64 costs time and memory there and adds nothing over
    float32 against a bf16 or fp16 model's error), float64 for a float32 model, whose float32 twin would be itself (a
    freeze with no tolerance then exact: every reordering refused at one ulp). float32 is the fallback where a float64
    step raises."""
    narrow = gpu and bool(floats) and min(dtype.itemsize for dtype in floats) < 4
    return [torch.float32] if narrow else [torch.float64, torch.float32]


def exact_float32(torch: Any) -> None:
    """The twin's float32 as exact as the device gives it: TF32 off for matmuls and convolutions (cuDNN's default is
    on: a float32 twin of a conv net then rounds its operands to 10 mantissa bits, as fp16 does). The twin's worker
    is closed after its runs, so nothing is put back."""
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
