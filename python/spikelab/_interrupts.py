"""Waiting and cleaning up under Ctrl-C: a one-shot "done" signal that a Ctrl-C may interrupt
safely (:class:`Latch`), and a block that holds interruptions back (:func:`interrupts_deferred`).

``threading.Event.wait`` is built on a ``Condition``: a KeyboardInterrupt that lands while the
condition re-takes its lock leaves it released, and the ``with`` block then fails with
"RuntimeError: release unlocked lock" instead of the interruption. A bare lock's timed acquire
either takes the lock or raises, with nothing to restore, so waiting on it is interruptible at
any moment.
"""

import contextlib
import threading
from collections.abc import Iterator


class Latch:
    """Set once by a worker thread; waited on (with timeouts) by the main thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """True once set (at once if it already was); False after ``timeout`` seconds."""
        if self._set:
            return True
        if self._lock.acquire(timeout=max(timeout, 0.0)):
            self._lock.release()  # leave it open for every later wait
            return True
        return self._set


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM are held back (the cleanup after a first
    interruption finishes: the core stops, the interrupted manifest is written); one that
    came meanwhile is delivered to its handler when the block ends, unless the block is
    already ending with an exception. Only in the main thread (elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal

    held: list[int] = []
    names = [signal.SIGINT, signal.SIGTERM]
    old = {}
    try:
        for sig in names:
            old[sig] = signal.signal(sig, lambda signum, frame: held.append(signum))
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if held:
        signal.raise_signal(held[0])  # to the handler it was held back from
