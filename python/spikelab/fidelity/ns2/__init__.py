"""The ns-2 suite (``spikelab fidelity --against ns2``): spikelab scenarios written as ns-2.35
Tcl scripts, run by ``ns`` and compared with spikelab's ``ns2`` profile (docs/fidelity.md,
"Against ns-2.35")::

    import spikelab.fidelity.ns2 as ns2
    print([s.name for s in ns2.select()])                   # the suite
    res = ns2.run("out/ns2", only=["newreno-overflow"])     # needs ns (apt-get install ns2)
    print(res.summary_line())

``script(resolved)`` is the writer alone: the Tcl text of a resolved scenario, or
:class:`Refused` naming the first field ns-2 cannot express.
"""

from __future__ import annotations

from typing import Any

from .runner import (
    INSTALL_HINT,
    Counts,
    Ns2Error,
    Ns2Run,
    ns_binary,
    run_plan,
    run_script,
)
from .suite import (
    METRICS,
    Ns2SuiteError,
    Outcome,
    Scenario,
    SuiteResult,
    agrees,
    check,
    parse_suite,
    report,
    run,
    select,
    spikelab_counts,
)
from .tcl import Plan, Refused, plan


def script(resolved: dict[str, Any]) -> str:
    """The ns-2 script of a resolved scenario (``json.loads(spikelab._core.resolve(...))``)."""
    return plan(resolved)[1]


__all__ = ["INSTALL_HINT", "METRICS", "Counts", "Ns2Error",
           "Ns2Run", "Ns2SuiteError", "Outcome", "Plan", "Refused", "Scenario", "SuiteResult",
           "agrees", "check", "ns_binary",
           "parse_suite", "plan", "report", "run", "run_plan", "run_script", "script",
           "select", "spikelab_counts"]
