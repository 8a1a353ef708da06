"""The kernel-fidelity suite: scenarios simulated with the ``linux`` TCP profile and emulated
against the Linux kernel's TCP (``spikelab emulate``), one at a time, compared metric by
metric (docs/fidelity.md)::

    import spikelab.fidelity as fid
    print([s.name for s in fid.select()])               # the suite (no root needed)
    res = fid.run("out/fidelity", only=["rate-50mbit"])   # as root
    print(res.summary_line())                            # "1 of 1 scenarios agree"

The scenarios are plain spikelab scenarios (``scenarios/NAME.toml``, package data);
``suite.toml`` orders them and holds per-scenario notes (the event time, extra kernel
sysctls, known causes of differences).
"""

from .suite import (
    METRICS,
    FidelityError,
    Outcome,
    Scenario,
    SuiteResult,
    check,
    parse_suite,
    preflight,
    report,
    rewrite,
    run,
    select,
    table,
)

__all__ = ["METRICS", "FidelityError", "Outcome", "Scenario", "SuiteResult", "check",
           "parse_suite", "preflight", "report", "rewrite", "run", "select", "table"]
