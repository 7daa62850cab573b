"""The JSON Schema of a workload_bench result.json, committed as validators/workload_bench.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.workload.schema > validators/workload_bench.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.workload.models import WorkloadBenchResult
from hyperloom.validators.schemas import model_schema


def result_schema() -> dict[str, Any]:
    return model_schema(WorkloadBenchResult, "hyperloom.workload_bench/1", "Hyperloom workload bench result",
                        "result.json in a workload session's bench folder (.hyperloom/workload/<name>/bench/): the WorkloadBenchResult the "
                        "tool returns.")


if __name__ == "__main__":
    print(json.dumps(result_schema(), indent=2))
