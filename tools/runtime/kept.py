"""Inputs a warm worker keeps on its GPU between trials, each checked after every trial that used it.

A trial still gets fresh device buffers with its inputs copied in, but from a copy kept on the device
(device to device, at memory speed) instead of from host memory over the bus. What could make that copy
differ from a fresh process's is a kernel that writes outside its own buffers and lands in a kept copy:
every kept copy carries a checksum (kernels/runtime/timing.hip's hyperloom_checksum) taken when it was
made, and after each trial the copies it used are summed again. A changed sum fails that trial as an
ERROR that names the input (the pool then replaces the process, and its copies with it), so no later
trial ever reads a damaged input. Copies are kept up to a share of the device's memory (least recently
used dropped first); beyond it inputs are copied from the host as before.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.tools.runtime.drivers import Driver, KernelParams

CHECKSUM_ENTRY, CHECKSUM_BLOCKS, CHECKSUM_THREADS = "hyperloom_checksum", 1024, 256
KEEP_SHARE = 0.25
"""At most this share of the device's memory holds kept copies: the kernels under test need the rest."""
WORD_BYTES = 4


@dataclass
class Kept:
    name: str
    pointer: Any
    nbytes: int
    padded_bytes: int  # whole 32-bit words, the tail zeroed: what the checksum reads
    checksum: int


class DeviceInputs:
    """The kept copies on one device, made and checked with the helpers code object `helpers` (timing.hip)."""

    def __init__(self, driver: Driver, helpers: str) -> None:
        self.driver = driver
        module = Driver.load(driver, Path(helpers).read_bytes())  # the base class's load: kept for the process, not freed per trial
        self._function = driver.function(module, CHECKSUM_ENTRY)
        self._sum = Driver.malloc(driver, 8)
        self.limit_bytes = int(driver.total_bytes() * KEEP_SHARE)
        self._copies: OrderedDict[object, Kept] = OrderedDict()
        self._held_bytes = 0
        self._used: set[object] = set()

    def copy_of(self, key: object, name: str, read: Callable[[], np.ndarray]) -> Kept | None:
        """The kept copy of the input `key` names (made from `read()` now if there is room), marked used by this
        trial; None: copy it from the host."""
        kept = self._copies.get(key)
        if kept is None:
            host = read()
            padded = -(-host.nbytes // WORD_BYTES) * WORD_BYTES
            if padded == 0 or not self._room(padded):
                return None
            pointer = Driver.malloc(self.driver, padded)
            self.driver.memset(pointer, 0, padded)
            self.driver.htod(pointer, host.ctypes.data, host.nbytes)
            kept = self._copies[key] = Kept(name, pointer, host.nbytes, padded, self._checksum(pointer, padded))
            self._held_bytes += padded
        self._copies.move_to_end(key)
        self._used.add(key)
        return kept

    def changed(self) -> list[str]:
        """The names of kept copies this trial used whose contents changed; those copies are dropped."""
        used, self._used = self._used, set()
        damaged = [key for key in used if key in self._copies
                   and self._checksum(self._copies[key].pointer, self._copies[key].padded_bytes) != self._copies[key].checksum]
        names = [self._copies[key].name for key in damaged]
        for key in damaged:
            self._drop(key)
        return names

    def _room(self, nbytes: int) -> bool:
        """Make room for `nbytes` by dropping copies this trial has not used, least recently used first."""
        for key in [k for k in self._copies if k not in self._used]:
            if self._held_bytes + nbytes <= self.limit_bytes:
                break
            self._drop(key)
        return self._held_bytes + nbytes <= self.limit_bytes

    def _drop(self, key: object) -> None:
        kept = self._copies.pop(key)
        self._used.discard(key)
        self._held_bytes -= kept.padded_bytes
        self.driver.free(kept.pointer)

    def _checksum(self, pointer: Any, padded: int) -> int:
        self.driver.memset(self._sum, 0, 8)
        params = KernelParams([ctypes.c_uint64(int(pointer)), ctypes.c_int64(padded // WORD_BYTES), ctypes.c_uint64(int(self._sum))])
        self.driver.launch(self._function, [CHECKSUM_BLOCKS, 1, 1], [CHECKSUM_THREADS, 1, 1], 0, params)
        total = np.zeros(1, dtype=np.uint64)
        self.driver.dtoh(total.ctypes.data, self._sum, 8)  # waits for the sum
        return int(total[0])
