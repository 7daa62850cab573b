"""The session's device-second budget, shared by every worker's launches."""

from __future__ import annotations

import threading

MIN_LAUNCH_S = 0.5
"""A launch is not started with less budget than this left: it could not finish anything useful."""


class Budget:
    """Device-seconds shared by the workers: each launch reserves its cap and settles what it used.

    Only time actually used is spent. A launch that finds the rest reserved by launches in flight
    waits for them to settle (they usually use far less than their cap) instead of giving up.
    """

    def __init__(self, limit_s: float, spent_s: float) -> None:
        self.limit_s = limit_s
        self._spent_s = spent_s
        self._reserved_s = 0.0
        self._settled = threading.Condition()

    @property
    def spent_s(self) -> float:
        return self._spent_s

    def unspent_s(self) -> float:
        """What is left if every launch in flight used nothing more: the figure a stop rule reads."""
        with self._settled:
            return self.limit_s - self._spent_s

    def reserve(self, cap_s: float, *, wait: bool = False) -> float | None:
        """The timeout a launch may use (at most `cap_s`), reserved; None when the budget cannot start one.
        With `wait`, a launch that finds the rest reserved waits for the launches in flight to settle."""
        with self._settled:
            while True:
                left = self.limit_s - self._spent_s - self._reserved_s
                if left >= min(MIN_LAUNCH_S, cap_s):
                    granted = min(cap_s, left)
                    self._reserved_s += granted
                    return granted
                if not wait or self._reserved_s <= 0 or self.limit_s - self._spent_s < min(MIN_LAUNCH_S, cap_s):
                    return None
                self._settled.wait()

    def settle(self, reserved_s: float, used_s: float) -> None:
        with self._settled:
            self._reserved_s -= reserved_s
            self._spent_s += used_s
            self._settled.notify_all()


class BudgetExhausted(Exception):
    """A launch could not start (or was cut short) because the budget ran out."""
