"""Real-kernel emulation: a scenario's paths applied in real time to the Linux TCP stack.

    import spikelab.emulate as emu
    res = emu.emulate("examples/lte-handover-lossless.toml", out="out/emu")   # needs root
    emu.compare("out/sim", "out/emu", out="out/compare")
    emu.cleanup()                          # what crashed runs left behind

See docs/emulation.md: topology, the emulator, the kernel mapping, timing, limitations.
"""

from .compare import compare
from .kernel import EmulationError, has_privileges
from .run import cleanup, emulate

__all__ = ["EmulationError", "cleanup", "compare", "emulate", "has_privileges"]
