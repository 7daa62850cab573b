"""Worker side: the model's numerics beside the step, for the gate's twin rule (tools/workload/twin.py). Teacher
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
from typing import Any

ENCODER_INPUTS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""An encoder-decoder model -> the encoder's input of its last generate call (input_ids, attention_mask)."""


def record_encoder_inputs(model: Any) -> None:
    """On an encoder-decoder model, keep the encoder's input of each generate call (ENCODER_INPUTS), so the tokens it
    generated can be teacher-forced: its decoder's tokens are scored beside the encoder input they came from. Wraps
    the instance's generate, under every lever (a decode loop or a static cache wraps this one); a no-op otherwise."""
    if not getattr(getattr(model, "config", None), "is_encoder_decoder", False) or not callable(getattr(model, "generate", None)):
        return
    original = model.generate

    @functools.wraps(original)
    def generate(inputs: Any = None, **kwargs: Any) -> Any:
        ids = kwargs.get("input_ids", inputs)
        if getattr(ids, "dim", lambda: 0)() == 2 and not ids.is_floating_point():
            ENCODER_INPUTS[model] = {"input_ids": ids, "attention_mask": kwargs.get("attention_mask")}
        else:
            ENCODER_INPUTS.pop(model, None)  # embeddings, audio features: not recorded, so not scored
        return original(inputs, **kwargs)

    model.generate = generate


def logits(torch: Any, model: Any, requests: dict[str, Any] | None, context: Callable[[], AbstractContextManager[Any]],
           compiled: bool, encoder_recorded: bool = True) -> dict[str, Any]:
    """tokens name -> the logits `model` gives those tokens (`requests`: name -> {ids, prompt}), for each it can score.
    `encoder_recorded`: whether an encoder-decoder's last generate ran on the inputs the tokens came from (the worker's
    own step just before; not so for a reference worker scoring another's tokens), so its recorded encoder input may be used."""
    found = {}
    for tokens, asked in (requests or {}).items():
        scored = forced(torch, model, asked["ids"], int(asked["prompt"]), context, compiled, encoder_recorded)
        if scored is not None:
            found[tokens] = scored
    return found


def forced(torch: Any, model: Any, ids: list[list[int]], prompt: int, context: Callable[[], AbstractContextManager[Any]], compiled: bool,
           encoder_recorded: bool = True) -> Any:
    """The logits `model` gives the generated positions of `ids` (one forward over the whole sequence, inside
    `context()`), in the model's dtype; None where the model takes no input_ids or returns no logits. An encoder-decoder's
    tokens are its decoder's: scored as decoder_input_ids beside the encoder input its last generate recorded (the
    same rows), None without one (T5 raised on the decoder's tokens as its input_ids; BART took them as its encoder's,
    silently). A `compiled` model runs its compiled code where it has some for this call and eagerly where it would
    compile anew: the whole sequence in one call is a shape no step ran, and its compile cost 11.7 s of a 43 s trial on
    the H200 (the compiled numerics are gated on the generated steps' log-probabilities and in the timed pairs all the same)."""
    if prompt < 1:
        return None
    device = next(model.parameters()).device
    inputs: dict[str, Any] = {"input_ids": torch.tensor(ids, device=device)}
    if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        encoder = ENCODER_INPUTS.get(model) if encoder_recorded else None
        if encoder is None or encoder["input_ids"].shape[0] != len(ids):
            return None
        inputs = {"input_ids": encoder["input_ids"], "attention_mask": encoder["attention_mask"], "decoder_input_ids": inputs["input_ids"]}
    extra = {"use_cache": False} if "use_cache" in inspect.signature(model.forward).parameters else {}
    stance = torch.compiler.set_stance("eager_on_recompile") if compiled and hasattr(torch.compiler, "set_stance") else nullcontext()
    with torch.inference_mode(), context(), stance:
        result = model(**inputs, **extra)
    out = getattr(result, "logits", None)
    return None if out is None else out[:, prompt - 1:-1]


def upcast(torch: Any, value: Any, dtype: Any) -> Any:
    """Floating tensors in `value` (a tensor, or a list, tuple or dict of them, one level) as `dtype`; the rest as it is."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(upcast(torch, v, dtype) if isinstance(v, torch.Tensor) else v for v in value)
    if isinstance(value, dict):
        return {k: upcast(torch, v, dtype) if isinstance(v, torch.Tensor) else v for k, v in value.items()}
    return value
