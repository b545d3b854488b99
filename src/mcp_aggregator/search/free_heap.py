"""Handing memory that start-up alone needed back to the operating system."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)


def _glibc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None
    return trim


_TRIM = _glibc_trim()


def free_heap(*, collect: bool = True) -> None:
    """Collects cyclic garbage (with ``collect``), then asks glibc to return the free pages of
    its heaps.

    glibc keeps freed memory for reuse and only gives back what lies at the top of its main
    heap, so what a start freed (the model file's parsed graph, the migrations' objects, the
    embedding rounds' buffers) stayed in the process's RSS for good. Blocking (it walks every
    arena, a few milliseconds): call it once a start's work is done, off the event loop."""
    if collect:
        gc.collect()
    if _TRIM is not None:
        _TRIM(0)


def freeze_heap() -> None:
    """Leaves every object alive now out of the cycle collector's full collections from here on
    (``gc.freeze``): for a process's long-lived state, once it is built.

    A full collection walks every tracked object, and the gateway holds hundreds of thousands
    of them after its imports, model and start (half a second of the event loop per
    collection at 20 x 200 tools, measured, several per start as the catalogue grows). Frozen
    objects are still freed when their count drops; only a cycle among them that becomes
    garbage stays. Call it right after a collection (``free_heap``), so that none is frozen
    with it; only the process's owner should (the tests' processes run many gateways)."""
    gc.freeze()
