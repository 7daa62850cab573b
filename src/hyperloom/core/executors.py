"""Executors for work that is sometimes too small to be worth threads."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any


class InlineExecutor(Executor):
    """Runs each submitted call at once in the caller's thread; its future is already done."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the future, as a pool would
            future.set_exception(exc)
        return future


def pool_or_inline(threaded: bool, max_workers: int, name: str = "") -> Executor:
    """A thread pool of `max_workers` when the work is worth threads, else the caller's thread: starting and
    joining threads costs about a millisecond, more than a small gate or one cached build takes."""
    return ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix=name) if threaded else InlineExecutor()
