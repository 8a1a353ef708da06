"""A one-shot "done" signal that a Ctrl-C may interrupt safely.

``threading.Event.wait`` is built on a ``Condition``: a KeyboardInterrupt that lands while the
condition re-takes its lock leaves it released, and the ``with`` block then fails with
"RuntimeError: release unlocked lock" instead of the interruption. A bare lock's timed acquire
either takes the lock or raises, with nothing to restore, so waiting on it is interruptible at
any moment.
"""

import threading


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
