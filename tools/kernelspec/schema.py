"""The JSON Schema of kernel.yaml, generated from the pydantic models that load it.

validators/kernel_spec.schema.json is this function's output, committed; a test fails when the two
drift. Editors and agents can validate a spec against it without Hyperloom.
"""

from __future__ import annotations

from typing import Any

from hyperloom.tools.kernelspec.models import KernelSpec

SCHEMA_ID = "https://github.com/hyperloom/hyperloom/validators/kernel_spec.schema.json"


def kernel_spec_schema() -> dict[str, Any]:
    schema = KernelSpec.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Hyperloom kernel spec (kernel.yaml)",
        "description": "A kernel, its arguments, launch, shapes, reference, declared tolerance, metric and tuning space. See the "
                       "skill's spec.md.",
        **{k: v for k, v in schema.items() if k != "title"},
    }
