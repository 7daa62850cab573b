"""Long runs (a tune session, an optimize campaign) in a background thread of this process, by name: the one piece
of state the MCP server keeps between calls. A run's body sets its control's `opened` event once the caller may
return (the session or campaign opened); it is set at the body's end too, so a body that fails before opening never
leaves the caller waiting. What it raised is kept: a HyperloomError as it is (the caller re-raises it), anything
else as an internal error, logged with its traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hyperloom.core.errors import HyperloomError

log = logging.getLogger(__name__)


class Controlled(Protocol):
    stop: threading.Event
    opened: threading.Event


@dataclass
class Run:
    control: Any  # the tool's own Control (a stop flag, an opened event, and what else the tool's loop reports)
    thread: threading.Thread = field(default_factory=threading.Thread)
    error: str | None = None
    failure: BaseException | None = None


class Runs:
    def __init__(self, what: str) -> None:
        self.what = what
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Run | None:
        with self._lock:
            return self._runs.get(name)

    def running(self, name: str) -> bool:
        run = self.get(name)
        return run is not None and run.thread.is_alive()

    def refuse_if_running(self, name: str | None, tool: str) -> None:
        if name is not None and self.running(name):
            raise HyperloomError(f"{self.what} {name!r} is already running in this server",
                                 f"watch it with {tool} status, or stop it with {tool} stop")

    def register(self, name: str, run: Run) -> None:
        with self._lock:
            self._runs[name] = run

    def launch(self, control: Controlled, body: Callable[[], object], thread_name: str) -> Run:
        """Start `body` in a daemon thread; return at once (wait on control.opened for it to open)."""
        run = Run(control)

        def main() -> None:
            try:
                body()
            except HyperloomError as exc:
                run.error, run.failure = str(exc), exc
            except BaseException as exc:  # a bug: kept for the tool's status, logged with its traceback
                log.exception("%s failed", self.what)
                run.error, run.failure = f"internal error: {exc!r}", exc
            finally:
                control.opened.set()

        run.thread = threading.Thread(target=main, name=thread_name, daemon=True)
        run.thread.start()
        return run
