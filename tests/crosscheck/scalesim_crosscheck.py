"""Cross-check the perf-core systolic references against the real SCALE-Sim 3.0.0.

Run it with a Python that has ``scalesim==3.0.0`` (which needs numpy<2 and pandas<3, so never the
project's own environment); ``run_scalesim.sh`` builds such an environment and calls this script.

For random GEMMs (and a few conv layers) under every dataflow it runs SCALE-Sim in GEMM mode with
SRAMs large enough that nothing stalls, reads its COMPUTE, BANDWIDTH and DETAILED_ACCESS reports,
and compares:

* total cycles, SRAM ifmap reads, SRAM filter reads: equal to ours;
* SRAM ofmap writes: equal to ours for WS and IS; for OS, SCALE-Sim adds ``rows + cols`` per fold
  (a bookkeeping artefact we do not reproduce), so ours + folds * (rows + cols);
* mapping efficiency and overall utilization (SCALE-Sim prints percentages);
* conv layers: SCALE-Sim's output size is ``ceil((H - R + stride) / stride)``; where it equals our
  floor rule the lowered GEMM and the cycles must agree, elsewhere it must be ours + 1.

Exit status 0 when everything agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import io
import math
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load_systolic():
    """Load the perf-core pack's trusted systolic.py by path: it needs only numpy, while the
    package's __init__ imports every family module."""
    spec = importlib.util.spec_from_file_location("perfgrade_systolic", ROOT / "problems" / "perf-core" / "_trusted" / "systolic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


S = _load_systolic()

CONFIG = """[general]
run_name = crosscheck

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:    65536
FilterSramSzkB:   65536
OfmapSramSzkB:    65536
IfmapOffset:    0
FilterOffset:   100000000
OfmapOffset:    200000000
Dataflow : {dataflow}
Bandwidth : 10
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""


def run_scalesim(workdir: Path, dataflow: str, rows: int, cols: int, topology_row: str, gemm: bool) -> dict[str, str]:
    """One SCALE-Sim run; returns the first data row of its three reports, by column name."""
    from scalesim.scale_sim import scalesim

    run = Path(tempfile.mkdtemp(dir=workdir))
    cfg, topo, layout = run / "arch.cfg", run / "topo.csv", run / "layout.csv"
    cfg.write_text(CONFIG.format(rows=rows, cols=cols, dataflow=dataflow))
    header = "Layer, M, N, K," if gemm else \
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"
    topo.write_text(f"{header}\n{topology_row}\n")
    layout.write_text("Layer name,\n")
    with contextlib.redirect_stdout(io.StringIO()):
        sim = scalesim(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topo),
                       layout=str(layout), input_type_gemm=gemm)
        sim.run_scale(top_path=str(run))
    out: dict[str, str] = {}
    for name in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"):
        path = next(run.rglob(name))
        with path.open() as f:
            rows_ = list(csv.reader(f))
        out.update({h.strip(): v.strip() for h, v in zip(rows_[0], rows_[1]) if h.strip()})
    shutil.rmtree(run, ignore_errors=True)
    return out


def check_gemm(workdir: Path, dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> list[str]:
    rep = run_scalesim(workdir, dataflow, rows, cols, f"L0, {m}, {n}, {k},", gemm=True)
    fr, fc = S.folds(dataflow, m, n, k, rows, cols)
    acc = S.sram_accesses(dataflow, m, n, k, rows, cols)
    ofmap = S.scalesim_os_ofmap_writes(m, n, k, rows, cols) if dataflow == "os" else acc["ofmap_writes"]
    want = {
        "Stall Cycles": 0,
        "Total Cycles": S.total_cycles(dataflow, m, n, k, rows, cols),
        "SRAM IFMAP Reads": acc["ifmap_reads"],
        "SRAM Filter Reads": acc["filter_reads"],
        "SRAM OFMAP Writes": ofmap,
    }
    errors = []
    case = f"{dataflow} M={m} N={n} K={k} array={rows}x{cols}"
    for key, value in want.items():
        got = int(float(rep[key]))
        if got != value:
            errors.append(f"{case}: {key} scalesim={got} ours={value}")
    floats = {
        "Overall Util %": 100 * S.utilization(dataflow, m, n, k, rows, cols),
        "Mapping Efficiency %": 100 * S.mapping_efficiency(dataflow, m, n, k, rows, cols),
    }
    for key, value in floats.items():
        got = float(rep[key])
        if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9):
            errors.append(f"{case}: {key} scalesim={got} ours={value}")
    return errors


def check_conv(workdir: Path, dataflow: str, layer: dict[str, int], rows: int, cols: int) -> list[str]:
    h, w, fh, fw = layer["ifmap_h"], layer["ifmap_w"], layer["filter_h"], layer["filter_w"]
    c, nf, st = layer["channels"], layer["num_filters"], layer["stride"]
    rep = run_scalesim(workdir, dataflow, rows, cols, f"C0, {h}, {w}, {fh}, {fw}, {c}, {nf}, {st},", gemm=False)
    p, q, m, n, k = S.conv_to_gemm(layer)
    # SCALE-Sim's ceil form: one more output row (column) wherever the stride does not divide
    p_ss = p + (1 if (h - fh) % st else 0)
    q_ss = q + (1 if (w - fw) % st else 0)
    assert p_ss == math.ceil((h - fh + st) / st) and q_ss == math.ceil((w - fw + st) / st)
    want = S.total_cycles(dataflow, p_ss * q_ss, n, k, rows, cols)
    got = int(float(rep["Total Cycles"]))
    if got != want:
        return [f"conv {dataflow} {layer} array={rows}x{cols}: Total Cycles scalesim={got} ours={want}"]
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100, help="random GEMMs per dataflow")
    ap.add_argument("--conv-cases", type=int, default=20, help="random conv layers per dataflow")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args(argv)

    rnd = random.Random(args.seed)
    errors: list[str] = []
    runs = 0
    with tempfile.TemporaryDirectory(prefix="perfgrade-scalesim-") as tmp:
        workdir = Path(tmp)
        golden = [("os", 64, 64, 64, 8, 8), ("ws", 256, 256, 256, 32, 32)]
        for case in golden:
            errors += check_gemm(workdir, *case)
            runs += 1
        for dataflow in S.DATAFLOWS:
            for _ in range(args.cases):
                rows, cols = rnd.randint(1, 12), rnd.randint(1, 12)
                if rows * cols == 1:
                    cols = 2
                m, n, k = rnd.randint(1, 40), rnd.randint(1, 40), rnd.randint(1, 40)
                errors += check_gemm(workdir, dataflow, m, n, k, rows, cols)
                runs += 1
            for _ in range(args.conv_cases):
                fh = rnd.choice([1, 2, 3, 5])
                st = rnd.choice([1, 2, 3])
                layer = {"ifmap_h": rnd.randint(fh, 14), "filter_h": fh, "channels": rnd.randint(1, 4),
                         "num_filters": rnd.randint(1, 12), "stride": st}
                layer["ifmap_w"], layer["filter_w"] = layer["ifmap_h"], fh
                errors += check_conv(workdir, dataflow, layer, rnd.randint(2, 8), rnd.randint(2, 8))
                runs += 1
    for e in errors[:50]:
        print("MISMATCH", e)
    print(f"{runs} SCALE-Sim runs, {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
