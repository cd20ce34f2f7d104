"""Pausing the cyclic garbage collector during a bulk pass.

A pass over a long stream (parsing it, decoding it, pairing it, planning its
repairs) allocates an object or more per entry, and keeps most of them. Each
allocation counts towards the cyclic collector's next run, and its runs
traverse everything alive, the whole stream included: left on, the collector
makes such a pass cost more per entry the longer the stream (measured: twice
as much at a million entries). The passes build no reference cycles, so there
is nothing for it to find until they end.

The pause defers rather than removes one cost: the first collection after it
traverses what the pass kept, once. On a stream too large for the CPU caches
that traversal misses the cache on every object, which is what is left of
the growth per entry (see the README's benchmark figures).
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block, if it is running; then resume it.

    When the application has turned the collector off, it stays off. Reference
    counting still frees everything the block drops.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
