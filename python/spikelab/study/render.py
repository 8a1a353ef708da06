"""A study's report: ``report.html`` (self-contained: figures embedded) and ``report.md``.

Both show the claims with their verdicts and the numbers behind them, the figures, mean ± 95%
CI per grid point, failed runs, the scenario and the versions that produced the data.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.stats import (
    DEFAULT_METRICS,
    as_py,
    column_cells,
    is_number,
    labelled,
    summarize,
    summary_cells,
    unit_of,
)
from ..store import results
from ..store.sweep import scenario_text

from .definition import paper_tally

if TYPE_CHECKING:
    from ..store.sweep import SweepResult
    from .definition import ClaimResult, Study

_MARK = {"holds": "✔ holds", "fails": "✘ fails", "undecided": "? undecided",
         "error": "⚠ error"}
_CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; line-height: 1.45; }
h1 { margin-bottom: .2rem; } .meta { color: #666; font-size: .9rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.holds td.verdict { background: #e3f6e3; } tr.fails td.verdict { background: #fbe3e3; }
tr.error td.verdict { background: #fff3cd; } tr.undecided td.verdict { background: #eee; }
p.lead { font-size: 1.1rem; font-weight: 600; margin: .2rem 0; }
figure { margin: 1rem 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: .9rem; }
pre { background: #f7f7f7; padding: .6rem; overflow-x: auto; font-size: .8rem; }
"""
# Marks the page when every embedded figure decoded (the report test reads this back).
_CHECK = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var bad = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; });
  document.body.setAttribute('data-figures', imgs.length + ' ' + (imgs.length - bad.length));
});
"""


def _numbers(numbers: dict[str, Any]) -> str:
    out = []
    for k, v in numbers.items():
        unit = unit_of(k)
        shown = column_cells(k, [v])[0]
        out.append(f"{k} = {shown}" + (f" {unit[0]}" if unit and is_number(as_py(v)) else ""))
    return ", ".join(out)


def _summary_rows(res: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Mean ± 95 % CI per grid point and metric (``stats.summary_cells``)."""
    frame = res.runs.to_pandas()
    metrics = [m for m in DEFAULT_METRICS if m in frame.columns]
    if "status" in frame.columns and not (frame["status"] == "ok").any():
        return [], []
    return summary_cells(summarize(frame, res.params(), metrics), metrics)


def _facts(res: SweepResult) -> list[tuple[str, str]]:
    m = res.manifest
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items())
    return [
        ("runs", f"{m.get('runs_ok', '?')} ok, {m.get('runs_failed', '?')} failed, "
                 f"of {m.get('runs_total', '?')}"),
        ("seeds", f"base {m.get('seed')}; {m.get('seed_rule', '')}"),
        ("overrides", "; ".join(m.get("overrides") or []) or "none (the study as written)"),
        ("executor", f"{m.get('executor', '?')}; {m.get('wall_s', 0):.1f} s wall"),
        ("versions", versions),
        ("platform", m.get("platform", "?")),
        ("created", m.get("created", "?")),
    ]


Singles = list[tuple[str, str, list[Path]]]


Shown = list[tuple[Any, Any]]  # (TableSpec, pandas.DataFrame)


def write(outdir: Path, study: Study, res: SweepResult, claims: list[ClaimResult],
          figures: list[Path], singles: Singles = (), tables: Shown = (),
          changed: list[str] = ()) -> None:
    results.atomic_write(outdir / "report.html", lambda tmp: tmp.write_text(
        _html(outdir, study, res, claims, figures, singles, tables, changed),
        encoding="utf-8"))
    results.atomic_write(outdir / "report.md", lambda tmp: tmp.write_text(
        _markdown(outdir, study, res, claims, figures, singles, tables, changed),
        encoding="utf-8"))


def lead(claims: list[ClaimResult], changed: list[str] = ()) -> str:
    """The report's first line: the paper claims reproduced, then every claim, and whether the
    run departs from the study as written."""
    held, papers = paper_tally(claims)
    line = f"paper results reproduced: {held} of {papers}" if papers else "no paper claims"
    line += f" · {sum(r.status == 'holds' for r in claims)} of {len(claims)} claims hold"
    if changed:
        line += " · NOT the study as written: " + "; ".join(changed)
    return line


def _title(study: Study, changed: list[str]) -> str:
    return study.title + (" (with overrides)" if changed else "")


def _paper_cell(claim: Any) -> str:
    """Kind, and for a paper claim its section, the paper's value and the band."""
    if claim.kind != "paper":
        return claim.kind
    text = f"paper {claim.section}: {claim.paper_value}; reproduced if {claim.band}"
    if claim.explained_by:
        text += f"; explained by {claim.explained_by}"
    return text


def _cells(frame: Any) -> tuple[list[str], list[list[str]]]:
    names = [str(c) for c in frame.columns]
    columns = [column_cells(name, list(frame.iloc[:, i])) for i, name in enumerate(names)]
    return [labelled(c) for c in names], [list(row) for row in zip(*columns, strict=True)]


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def _caption(study: Study, path: Path) -> str:
    for spec in study.figures:
        if spec.stem() == path.stem:
            return spec.caption or spec.title or spec.stem()
    return path.stem


def _html(outdir: Path, study: Study, res: SweepResult, claims: list[ClaimResult],
          figures: list[Path], singles: Singles, tables: Shown, changed: list[str]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           f"<title>{e(_title(study, changed))}: spikelab study report</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<p class='lead'>{e(lead(claims, changed))}</p>",
           f"<h1>{e(_title(study, changed))}</h1>",
           f"<p class='meta'>study <code>{e(study.name)}</code></p>"]
    if study.description:
        out.append(f"<p>{e(study.description)}</p>")
    if study.sources:
        out.append("<p>Sources: " + "; ".join(e(s) for s in study.sources) + "</p>")
    out.append("<h2>Claims</h2><table><tr><th>claim</th><th>kind</th><th>source</th>"
               "<th>verdict</th><th>numbers behind it</th></tr>")
    for r in claims:
        detail = _numbers(r.numbers)
        if r.error:
            detail = (detail + "; " if detail else "") + r.error
        note = f"<br><small>{e(r.claim.note)}</small>" if r.claim.note else ""
        out.append(f"<tr class='{r.status}'><td><b>{e(r.claim.id)}</b>: {e(r.claim.claim)}"
                   f"{note}</td><td>{e(_paper_cell(r.claim))}</td><td>{e(r.claim.source)}</td>"
                   f"<td class='verdict'>{_MARK[r.status]}</td><td>{e(detail)}</td></tr>")
    out.append("</table>")
    for spec, frame in tables:
        header, rows = _cells(frame)
        out.append(f"<h2>{e(spec.title)}</h2>")
        if spec.caption:
            out.append(f"<p>{e(spec.caption)}</p>")
        out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
        out.append("</table>")
    out.append("<h2>Figures</h2>")
    for p in figures:
        out.append(f"<figure>{_img(p, p.stem)}"
                   f"<figcaption>{e(_caption(study, p))}</figcaption></figure>")
    if singles:
        out.append("<h2>Single runs</h2><p>Each run below was re-run alone with packet "
                   "tracing (same seed and parameters as its row in the runs table).</p>")
        for run_id, label, paths in singles:
            out.append(f"<h3>{e(run_id)}: {e(label)}</h3>")
            out += [f"<figure>{_img(p, f'{run_id} {p.stem}')}</figure>" for p in paths]
    header, rows = _summary_rows(res)
    if rows:
        out.append("<h2>Mean ± 95% CI per grid point</h2><table><tr>"
                   + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        for row in rows:
            out.append("<tr>" + "".join(f"<td class='num'>{e(c)}</td>" for c in row) + "</tr>")
        out.append("</table>")
    failures = res.manifest.get("failures", [])
    if failures:
        out.append(f"<h2>Failed runs ({len(failures)})</h2><table><tr><th>run</th>"
                   "<th>error</th></tr>")
        out += [f"<tr><td>{e(f['run_id'])}</td><td>{e(str(f['error']))}</td></tr>"
                for f in failures]
        out.append("</table>")
    out.append("<h2>Provenance</h2><table>")
    out += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _facts(res)]
    out.append("</table>")
    out.append("<h3>Sweep</h3><pre>" + e(json.dumps(res.manifest.get("sweep"), indent=1))
               + "</pre>")
    out.append("<h3>Scenario</h3><pre>" + e(scenario_text(outdir, res.manifest)) + "</pre>")
    if study.views:
        out.append("<h3>Views (the claims and tables select from them)</h3>")
        out += [f"<p><b>{e(v.name)}</b></p><pre>{e(v.sql.strip())}</pre>" for v in study.views]
    out.append("<h3>Claim queries</h3>")
    out += [f"<p><b>{e(r.claim.id)}</b></p><pre>{e(r.claim.sql.strip())}</pre>" for r in claims]
    out.append(f"<script>{_CHECK}</script></body></html>")
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(outdir: Path, study: Study, res: SweepResult, claims: list[ClaimResult],
              figures: list[Path], singles: Singles, tables: Shown, changed: list[str]) -> str:
    out = [lead(claims, changed), "", f"# {_title(study, changed)}", "",
           f"Study `{study.name}`.", ""]
    if study.description:
        out += [study.description, ""]
    out += ["## Claims", "", "| claim | kind | source | verdict | numbers behind it |",
            "|---|---|---|---|---|"]
    for r in claims:
        detail = _numbers(r.numbers) + (f"; {r.error}" if r.error else "")
        out.append(f"| **{r.claim.id}**: {_md_cell(r.claim.claim)} | "
                   f"{_md_cell(_paper_cell(r.claim))} | {_md_cell(r.claim.source)}"
                   f" | {_MARK[r.status]} | {_md_cell(detail)} |")
    for spec, frame in tables:
        header, rows = _cells(frame)
        out += ["", f"## {spec.title}", ""] + ([spec.caption, ""] if spec.caption else [])
        out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    out += ["", "## Figures", ""]
    out += [f"![{_caption(study, p)}]({p.relative_to(outdir).as_posix()})\n" for p in figures]
    if singles:
        out += ["## Single runs", ""]
        for run_id, label, paths in singles:
            out += [f"### {run_id}: {label}", ""]
            out += [f"![{run_id} {p.stem}]({p.relative_to(outdir).as_posix()})\n"
                    for p in paths]
    header, rows = _summary_rows(res)
    if rows:
        out += ["## Mean ± 95% CI per grid point", "", "| " + " | ".join(header) + " |",
                "|" + "---|" * len(header)]
        out += ["| " + " | ".join(rows_i) + " |" for rows_i in rows]
        out.append("")
    failures = res.manifest.get("failures", [])
    if failures:
        out += [f"## Failed runs ({len(failures)})", ""]
        out += [f"- `{f['run_id']}`: {f['error']}" for f in failures]
        out.append("")
    out += ["## Provenance", ""] + [f"- {k}: {v}" for k, v in _facts(res)] + [""]
    return "\n".join(out)
