"""The JSON Schema of profile.json (the ProfileResult), committed as validators/profile.schema.json.

Regenerate after changing the models: python -m hyperloom.tools.profile.schema > validators/profile.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from hyperloom.tools.profile.models import ProfileResult


def result_schema() -> dict[str, Any]:
    schema = ProfileResult.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "hyperloom.profile/1",
            "title": "Hyperloom profile result",
            "description": "profile.json in a profile run's folder (.hyperloom/profile/<name>/): the ProfileResult the tool returns.",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


if __name__ == "__main__":
    print(json.dumps(result_schema(), indent=2))
