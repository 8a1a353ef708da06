"""Real-kernel emulation: a scenario's paths applied in real time to the Linux TCP stack (to
usrsctp, the FreeBSD SCTP stack as a library, for SCTP flows).

    import spikelab.emulate as emu
    res = emu.emulate("examples/lte-handover-lossless.toml", out="out/emu")   # needs root
    emu.compare("out/sim", "out/emu", out="out/compare")
    emu.cleanup()                          # what crashed runs left behind

See docs/emulation.md: topology, the emulator, the kernel mapping, timing, limitations.
"""

__all__ = ["EmulationError", "cleanup", "compare", "emulate", "has_privileges"]

# Loaded on first use: `spikelab --help` registers the emulate command without importing the
# emulator, its kernel plumbing or matplotlib.
_LAZY = {"compare": "..figures.compare", "EmulationError": ".kernel",
         "has_privileges": ".kernel", "cleanup": ".run", "emulate": ".run"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spikelab.emulate' has no attribute {name!r}")
