"""The paper studies' claims as definitions: every source paper has paper claims with its
section and number, and none of the claims that hold by construction poses as a paper result
(docs/studies.md, "Shipped studies"). The verdicts are the studies' own tests'."""

from __future__ import annotations

import re

import pytest
from spikelab import study

PAPERS = {
    "000": ("kato-lte-handover",),
    "001": ("tauran-leo-delack",),
    "002": ("fu-delay-spike", "fu-delay-spike-sctp"),
    "003": ("decicco-umts",),
    "004": ("fallon-sctp-rto",),
}
# Claims that hold by construction: a number the model was calibrated on, RFC arithmetic, a
# setup inferred from the very statement, or a test a random ranking passes (issue list in
# docs/studies.md). They may be model claims, never paper ones.
BY_CONSTRUCTION = {
    "kato-lte-handover": ("dsack-poor-in-lossless-spike", "pairs-do-not-help"),
    "decicco-umts": ("uplink-goodput-in-band", "downlink-goodput-in-band",
                     "downlink-timeouts-in-band", "uplink-timeouts-below-half"),
    "fallon-sctp-rto": ("failover-after-six-backed-off-timeouts", "failover-time-against-data",
                        "analytical-differs-from-simulated-top"),
}


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_each_paper_has_three_paper_claims_with_section_and_number(paper):
    claims = [c for name in PAPERS[paper] for c in study.find(name).claims]
    papers = [c for c in claims if c.kind == study.PAPER]
    assert len(papers) >= 3, paper
    for c in papers:
        assert c.section and c.paper_value and c.band, c.id
        # The section is the paper's: a section sign, a figure or a table.
        assert re.search(r"§|Fig\.|Table|abstract", c.section), (c.id, c.section)
        assert f"paper {paper}" in c.source, (c.id, c.source)
    ids = {c.id: c for c in claims}
    for c in papers:
        if c.explained_by is not None:
            assert ids[c.explained_by].kind != study.PAPER, c.id  # an ablation, not the paper


@pytest.mark.parametrize("name", sorted(BY_CONSTRUCTION))
def test_no_claim_that_holds_by_construction_is_a_paper_claim(name):
    kinds = {c.id: c.kind for c in study.find(name).claims}
    for cid in BY_CONSTRUCTION[name]:
        assert kinds.get(cid, study.MODEL) != study.PAPER, cid
