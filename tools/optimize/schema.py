"""The JSON Schema of a campaign's breakdown.json, committed as validators/optimize_breakdown.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.optimize.schema > validators/optimize_breakdown.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.optimize.models import OptimizeReport
from hyperloom.validators.schemas import model_schema


def breakdown_schema() -> dict[str, Any]:
    return model_schema(OptimizeReport, "hyperloom.optimize_breakdown/1", "Hyperloom optimize campaign breakdown",
                        "breakdown.json in a campaign's folder (.hyperloom/optimize/<name>/): the OptimizeReport optimize_report returns "
                        "once it is closed.")


if __name__ == "__main__":
    print(json.dumps(breakdown_schema(), indent=2))
