"""Digests of the tables the simulator writes, to prove that a change to the engine moves no
number (docs/models.md, "Engine digests").

    python3 scripts/engine_digests.py            # rewrite tests/data/engine-digests.json
    python3 scripts/engine_digests.py --check    # compare with it; exit 1 naming what differs
    python3 scripts/engine_digests.py --studies [--check]   # the shipped studies (slower)

Examples: every ``examples/*.toml`` is run at its own trace level and again at ``packets``
(which fills the time series and packet tables), and each table of the result is digested:
SHA-256 over its columns (name, type, every value; dictionary columns decoded to their
strings, NaN as one bit pattern), rows in the order the core gives them (a run's order is
deterministic, so a reordering counts as a change). ``tests/test_engine_digests.py``
recomputes them with the current build.

Studies (``--studies``): every shipped study at ``--replications 1`` on one worker, and
``examples/sweep.toml`` as a sweep; every Parquet table the study writes (its runs dataset,
the runs drawn as figures) with rows sorted by run (workers finish in any order), and each
claim's status and numbers. Written to tests/data/study-digests.json and checked by this
script only (about two minutes of CPU).

Nothing wall-clock or provenance is digested: the manifests (timings, versions, paths) are
left out, and the tables hold none.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE_DIGESTS = ROOT / "tests" / "data" / "engine-digests.json"
STUDY_DIGESTS = ROOT / "tests" / "data" / "study-digests.json"
TABLES = ("runs", "timeseries", "packets")
CANONICAL_NAN = np.frombuffer(np.float64(np.nan).tobytes(), dtype="<u8")[0]


def _column_bytes(col: pa.ChunkedArray | pa.Array) -> tuple[str, list[bytes]]:
    """A column as (type name, byte strings): values in row order, nulls marked."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.uint8)
    kind = str(arr.type)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string()).fill_null("")
        lengths = np.asarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), "<i8")
        data = "".join(arr.to_pylist()).encode()
        return "string", [nulls.tobytes(), lengths.tobytes(), data]
    if pa.types.is_floating(arr.type):
        values = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), "<f8")
        bits = values.view("<u8").copy()
        bits[np.isnan(values)] = CANONICAL_NAN
        return "float64", [nulls.tobytes(), bits.tobytes()]
    if pa.types.is_integer(arr.type) or pa.types.is_boolean(arr.type):
        fill = False if pa.types.is_boolean(arr.type) else 0
        values = np.asarray(arr.fill_null(fill).to_numpy(zero_copy_only=False))
        return kind, [nulls.tobytes(), values.astype("<i8").tobytes()]
    raise TypeError(f"column of type {arr.type}: no canonical form")


def table_digest(table: pa.Table, sort_by: Iterable[str] = ()) -> dict:
    """``{"rows": n, "sha256": hex}`` of a table's content (see the module's docstring).
    ``sort_by``: columns present in the table to sort the rows by first (stable)."""
    keys = [k for k in sort_by if k in table.column_names]
    if keys and table.num_rows:
        table = table.take(pc.sort_indices(table, [(k, "ascending") for k in keys]))
    h = hashlib.sha256()
    for name in table.column_names:
        kind, parts = _column_bytes(table.column(name))
        h.update(f"{name}\0{kind}\0".encode())
        for part in parts:
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return {"rows": table.num_rows, "sha256": h.hexdigest()}


def example_digests() -> dict:
    """Every example at its own trace level and at ``packets``: its tables and event count."""
    import spikelab

    out = {}
    for path in sorted(EXAMPLES.glob("*.toml")):
        own = spikelab.validate(str(path))["sim"]["trace"]
        for trace in dict.fromkeys((own, "packets")):
            res = spikelab.run(str(path), trace=trace, plots=False, progress=False)
            entry = {name: table_digest(res.table(name)) for name in TABLES}
            entry["events"] = res.events
            out[f"{path.name}@{trace}"] = entry
    return out


def _dir_digests(outdir: Path) -> dict:
    """Every Parquet table under ``outdir`` but its parts (sorted by run), and the claims."""
    out = {}
    for path in sorted(outdir.rglob("*.parquet")):
        rel = path.relative_to(outdir)
        if rel.parts[0] != "parts":
            out[str(rel)] = table_digest(pq.read_table(path), sort_by=("run_id", "flow"))
    claims = outdir / "claims.json"
    if claims.is_file():
        for c in json.loads(claims.read_text())["claims"]:
            out[f"claim:{c['id']}"] = {"status": c["status"], "numbers": c.get("numbers")}
    return out


def study_digests(names: Iterable[str] | None = None) -> dict:
    """Every shipped study at one replication, and examples/sweep.toml as a sweep (not when
    ``names`` picks studies: --only checks and records those studies alone)."""
    import spikelab
    from spikelab import study

    out = {}
    with tempfile.TemporaryDirectory(prefix="engine-digests-") as tmp:
        if not names:
            sw = Path(tmp) / "sweep"
            spikelab.sweep(str(EXAMPLES / "sweep.toml"), sw, jobs=1, progress=False)
            out["sweep:examples/sweep.toml"] = _dir_digests(sw)
        for name in names or sorted(study.available()):
            d = Path(tmp) / name
            study.run(name, d, jobs=1, replications=1, progress=False)
            out[f"study:{name}"] = _dir_digests(d)
            print(f"  {name}: {len(out[f'study:{name}'])} digests", file=sys.stderr)
    return out


def _same(a, b) -> bool:
    """Equal, a NaN (a claim's undecided number) counting as equal to a NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def differences(want: dict, got: dict, prefix: str = "") -> list[str]:
    """Keys whose values differ, as dotted paths."""
    out = []
    for key in sorted(set(want) | set(got)):
        a, b = want.get(key), got.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key}.")
        elif not _same(a, b):
            out.append(f"{prefix}{key}: recorded {a!r}, now {b!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument("--studies", action="store_true",
                    help="the shipped studies at one replication (tests/data/study-digests.json)")
    ap.add_argument("--only", nargs="+", metavar="STUDY", help="with --studies: these only")
    args = ap.parse_args(argv)
    target = STUDY_DIGESTS if args.studies else EXAMPLE_DIGESTS
    got = study_digests(args.only) if args.studies else example_digests()
    if args.check:
        want = json.loads(target.read_text())
        if args.only:
            want = {k: v for k, v in want.items() if k.split(":", 1)[1] in args.only}
        diff = differences(want, got)
        for line in diff:
            print(line)
        print(f"{target.name}: {'differs' if diff else 'identical'} ({len(got)} entries)")
        return 1 if diff else 0
    target.parent.mkdir(parents=True, exist_ok=True)
    if args.only and target.exists():  # the other studies' entries stay as recorded
        got = {**json.loads(target.read_text()), **got}
    target.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(f"wrote {target.relative_to(ROOT)} ({len(got)} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
