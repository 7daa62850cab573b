"""The JSON Schema of profile.json (the ProfileResult), committed as validators/profile.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.profile.schema > validators/profile.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.profile.models import ProfileResult
from hyperloom.validators.schemas import model_schema


def result_schema() -> dict[str, Any]:
    return model_schema(ProfileResult, "hyperloom.profile/1", "Hyperloom profile result",
                        "profile.json in a profile run's folder (.hyperloom/profile/<name>/): the ProfileResult the tool returns.")


if __name__ == "__main__":
    print(json.dumps(result_schema(), indent=2))
