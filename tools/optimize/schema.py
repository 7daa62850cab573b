"""The JSON Schema of a campaign's breakdown.json, committed as validators/optimize_breakdown.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.optimize.schema > validators/optimize_breakdown.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.optimize.models import OptimizeReport


def breakdown_schema() -> dict[str, Any]:
    schema = OptimizeReport.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "hyperloom.optimize_breakdown/1",
            "title": "Hyperloom optimize campaign breakdown",
            "description": "breakdown.json in a campaign's folder (.hyperloom/optimize/<name>/): the OptimizeReport optimize_report returns once it is closed.",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


if __name__ == "__main__":
    print(json.dumps(breakdown_schema(), indent=2))
