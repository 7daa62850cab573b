"""The one error type for input and environment problems a caller can fix."""

from __future__ import annotations

from pydantic import ValidationError


class HyperloomError(Exception):
    """A problem the caller can act on: what went wrong, and what to do next.

    Bugs are not HyperloomErrors; they propagate with their traceback.
    """

    def __init__(self, cause: str, next_step: str) -> None:
        self.cause = cause.rstrip(".")
        self.next_step = next_step.rstrip(".")
        super().__init__(f"{self.cause}. Next step: {self.next_step}.")


def describe_validation_error(error: ValidationError, limit: int = 5) -> str:
    """Pydantic's errors as 'field: message' pairs, short enough for one line."""
    parts = [f"{'.'.join(str(p) for p in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors()[:limit]]
    return "; ".join(parts)
