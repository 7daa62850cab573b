"""The JSON Schema of a workload_bench result.json, committed as validators/workload_bench.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.workload.schema > validators/workload_bench.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.workload.models import WorkloadBenchResult


def result_schema() -> dict[str, Any]:
    schema = WorkloadBenchResult.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "hyperloom.workload_bench/1",
            "title": "Hyperloom workload bench result",
            "description": "result.json in a workload session's bench folder (.hyperloom/workload/<name>/bench/): the WorkloadBenchResult the tool returns.",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


if __name__ == "__main__":
    print(json.dumps(result_schema(), indent=2))
