"""``unshare -m --propagation private python tests/_with_tracefs.py ARGS...``: runs
``spikelab ARGS...`` with tracefs mounted in a private mount namespace, so a test can use the
tcp_probe tracepoint without mounting anything on the host. Exit 77 if the mount fails."""

import ctypes
import runpy
import sys

libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(b"nodev", b"/sys/kernel/tracing", b"tracefs", 0, None) != 0:
    print(f"cannot mount tracefs (errno {ctypes.get_errno()})", file=sys.stderr)
    raise SystemExit(77)
sys.argv = ["spikelab", *sys.argv[1:]]
runpy.run_module("spikelab", run_name="__main__")
