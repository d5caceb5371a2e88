"""F11 and F12: cycles and SRAM access counts of a GEMM on a systolic array (SCALE-Sim conventions).

A GEMM ``O[m][n] += I[m][k] * W[k][n]`` (``I`` is the ifmap operand, ``W`` the filter operand) runs
on an array of ``rows x cols`` processing elements. Each dataflow keeps one operand in place and
maps two GEMM dimensions onto the array (``Sr`` onto the rows, ``Sc`` onto the columns) while the
third one (``T``) is streamed in time:

========  ====  ====  ====  ===========================
dataflow   Sr    Sc    T    stationary
========  ====  ====  ====  ===========================
os         M     N     K    outputs (one per PE)
ws         K     N     M    filter (weights)
is         K     M     N    ifmap (inputs)
========  ====  ====  ====  ===========================

The operand matrix is cut into ``ceil(Sr/rows) * ceil(Sc/cols)`` folds that run back to back, each
on the full array (an edge fold takes as long as a full one). A fold lasts ``T + rows + cols - 2``
cycles for OS and ``T + 2*rows + cols - 2`` for WS and IS (``rows`` extra cycles load the
stationary operand). SCALE-Sim reports the number of the last busy cycle counted from 0, hence the
``- 1`` in the total. The tests check these closed forms against a cycle-by-cycle simulation of
the array, and tests/crosscheck against SCALE-Sim 3.0.0 itself.

SRAM accesses (words): every fold reads the elements of its own operand tiles once; WS and IS write
a partial sum for every output of every row fold (``ceil(K/rows)`` of them); OS writes each final
output once. SCALE-Sim's OS counter additionally adds ``rows + cols`` per fold, a bookkeeping
artefact of its code that we do not reproduce (the cross-check suite accounts for it).

Conv layers are lowered to a GEMM the SCALE-Sim way (``M`` = output pixels per filter, ``N`` =
filters, ``K`` = ``filter_h * filter_w * channels``), but with the usual floor rule for the output
size; SCALE-Sim itself uses ``ceil((H - R + stride) / stride)``, which counts a partial window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DATAFLOWS: tuple[str, ...] = ("os", "ws", "is")  # also the tie-break order


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def operand_dims(dataflow: str, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(Sr, Sc, T): the GEMM dimensions on the array rows, on the columns and in time."""
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    if dataflow == "is":
        return k, m, n
    raise ValueError(f"unknown dataflow {dataflow!r}")


def folds(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> tuple[int, int]:
    """(row folds, column folds)."""
    sr, sc, _ = operand_dims(dataflow, m, n, k)
    return ceil_div(sr, rows), ceil_div(sc, cols)


def _num_folds(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> int:
    fr, fc = folds(dataflow, m, n, k, rows, cols)
    return fr * fc


def cycles_per_fold(dataflow: str, t: int, rows: int, cols: int) -> int:
    if dataflow == "os":
        return t + rows + cols - 2
    return t + 2 * rows + cols - 2


def total_cycles(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> int:
    fr, fc = folds(dataflow, m, n, k, rows, cols)
    _, _, t = operand_dims(dataflow, m, n, k)
    return fr * fc * cycles_per_fold(dataflow, t, rows, cols) - 1


def mapping_efficiency(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> float:
    """Mean over folds of the fraction of PEs that hold a mapped element."""
    sr, sc, _ = operand_dims(dataflow, m, n, k)
    fr, fc = folds(dataflow, m, n, k, rows, cols)
    return (sr * sc) / (fr * fc * rows * cols)


def utilization(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> float:
    """MACs / (PEs x total cycles): SCALE-Sim's overall utilization, as a fraction."""
    return (m * n * k) / (rows * cols * total_cycles(dataflow, m, n, k, rows, cols))


def sram_accesses(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> dict[str, int]:
    if dataflow == "os":
        return {
            "ifmap_reads": m * k * ceil_div(n, cols),
            "filter_reads": k * n * ceil_div(m, rows),
            "ofmap_writes": m * n,
        }
    if dataflow == "ws":
        return {
            "ifmap_reads": m * k * ceil_div(n, cols),
            "filter_reads": k * n,
            "ofmap_writes": m * n * ceil_div(k, rows),
        }
    if dataflow == "is":
        return {
            "ifmap_reads": m * k,
            "filter_reads": k * n * ceil_div(m, cols),
            "ofmap_writes": m * n * ceil_div(k, rows),
        }
    raise ValueError(f"unknown dataflow {dataflow!r}")


def scalesim_os_ofmap_writes(m: int, n: int, k: int, rows: int, cols: int) -> int:
    """What SCALE-Sim's OS ofmap counter reports (with its per-fold rows + cols extra)."""
    fr, fc = folds("os", m, n, k, rows, cols)
    return m * n + fr * fc * (rows + cols)


def conv_output_size(size: int, kernel: int, stride: int) -> int:
    """Valid (unpadded) convolution output extent, floor rounding."""
    return (size - kernel) // stride + 1


def conv_to_gemm(layer: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """(P, Q, M, N, K) of a conv layer lowered to a GEMM."""
    p = conv_output_size(layer["ifmap_h"], layer["filter_h"], layer["stride"])
    q = conv_output_size(layer["ifmap_w"], layer["filter_w"], layer["stride"])
    return p, q, p * q, layer["num_filters"], layer["filter_h"] * layer["filter_w"] * layer["channels"]


def first_minimum(values: dict[str, int]) -> str:
    """The dataflow with the smallest value; ties go to the earliest in DATAFLOWS order."""
    best = DATAFLOWS[0]
    for df in DATAFLOWS[1:]:
        if values[df] < values[best]:
            best = df
    return best


# ------------------------------------------------------------------------------------------
# references
# ------------------------------------------------------------------------------------------

def os_cycles(gemm: dict[str, Any], array: dict[str, Any]) -> dict[str, Any]:
    """F11 easy: an output-stationary GEMM."""
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    fr, fc = folds("os", m, n, k, rows, cols)
    return {
        "row_folds": fr,
        "col_folds": fc,
        "folds": fr * fc,
        "cycles": total_cycles("os", m, n, k, rows, cols),
        "mapping_efficiency": mapping_efficiency("os", m, n, k, rows, cols),
        "utilization": utilization("os", m, n, k, rows, cols),
    }


def conv_dataflow_cycles(layer: dict[str, Any], array: dict[str, Any]) -> dict[str, Any]:
    """F11 hard: a conv layer lowered to a GEMM, cycles under every dataflow, the fastest."""
    p, q, m, n, k = conv_to_gemm(layer)
    rows, cols = array["rows"], array["cols"]
    fold_map = {df: _num_folds(df, m, n, k, rows, cols) for df in DATAFLOWS}
    cycle_map = {df: total_cycles(df, m, n, k, rows, cols) for df in DATAFLOWS}
    best = first_minimum(cycle_map)
    return {
        "P": p,
        "Q": q,
        "M": m,
        "N": n,
        "K": k,
        "folds": fold_map,
        "cycles": cycle_map,
        "best_dataflow": best,
        "best_utilization": (m * n * k) / (rows * cols * cycle_map[best]),
    }


def sram_access_counts(gemm: dict[str, Any], array: dict[str, Any], dataflow: str) -> dict[str, Any]:
    """F12 medium: SRAM reads and writes of one dataflow."""
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    fr, fc = folds(dataflow, m, n, k, rows, cols)
    return {"row_folds": fr, "col_folds": fc, **sram_accesses(dataflow, m, n, k, rows, cols)}


def dataflow_sram_energy(gemm: dict[str, Any], array: dict[str, Any], energy: dict[str, Any]) -> dict[str, Any]:
    """F12 hard: SRAM accesses, cycles and SRAM energy of every dataflow; the best by energy x delay."""
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    acc = {df: sram_accesses(df, m, n, k, rows, cols) for df in DATAFLOWS}
    cyc = {df: total_cycles(df, m, n, k, rows, cols) for df in DATAFLOWS}
    e = {
        df: acc[df]["ifmap_reads"] * energy["ifmap_read_pj"]
        + acc[df]["filter_reads"] * energy["filter_read_pj"]
        + acc[df]["ofmap_writes"] * energy["ofmap_write_pj"]
        for df in DATAFLOWS
    }
    edp = {df: e[df] * cyc[df] for df in DATAFLOWS}
    return {
        "ifmap_reads": {df: acc[df]["ifmap_reads"] for df in DATAFLOWS},
        "filter_reads": {df: acc[df]["filter_reads"] for df in DATAFLOWS},
        "ofmap_writes": {df: acc[df]["ofmap_writes"] for df in DATAFLOWS},
        "cycles": cyc,
        "energy_pj": e,
        "best_dataflow": first_minimum(edp),
    }


# ------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------

_ARRAY_SIDES = [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32]


def _array(rng: np.random.Generator, square_p: float = 0.2) -> dict[str, int]:
    """Mostly non-square; never 1 x 1 (a single PE would make the OS total 0 cycles for 1x1x1)."""
    rows = int(rng.choice(_ARRAY_SIDES))
    if rng.random() < square_p and rows > 1:
        cols = rows
    else:
        while True:
            cols = int(rng.choice(_ARRAY_SIDES))
            if cols != rows:
                break
    return {"rows": rows, "cols": cols}


def _dim(rng: np.random.Generator, side: int, max_dim: int) -> int:
    """A GEMM extent: below the array side, a non-multiple of it, or a multiple of it."""
    u = rng.random()
    if u < 0.2 and side > 1:
        return int(rng.integers(1, side))  # smaller than the array
    if u < 0.35:
        return side * int(rng.integers(1, max(2, max_dim // side) + 1))  # divisible
    return int(rng.integers(1, max_dim + 1))


def gen_gemm_array(rng: np.random.Generator, max_dim: int = 200) -> dict[str, Any]:
    """A GEMM and a (mostly non-square) array; extents below, at and around the array sides."""
    array = _array(rng)
    gemm = {
        "M": _dim(rng, array["rows"], max_dim),
        "N": _dim(rng, array["cols"], max_dim),
        "K": _dim(rng, array["rows"], max_dim),
    }
    return {"gemm": gemm, "array": array}


def gen_gemm_array_dataflow(rng: np.random.Generator, max_dim: int = 200) -> dict[str, Any]:
    """A GEMM, an array and one dataflow; each GEMM extent is drawn against both array sides."""
    array = _array(rng)
    sides = [array["rows"], array["cols"]]
    gemm = {d: _dim(rng, int(rng.choice(sides)), max_dim) for d in ("M", "N", "K")}
    return {"gemm": gemm, "array": array, "dataflow": str(rng.choice(list(DATAFLOWS)))}


def gen_gemm_array_energy(rng: np.random.Generator, max_dim: int = 160) -> dict[str, Any]:
    """A GEMM, an array and per-access SRAM energies. About a quarter of the cases make WS and IS
    tie exactly (M == N and equal ifmap and filter read energies)."""
    array = _array(rng)
    sides = [array["rows"], array["cols"]]
    gemm = {d: _dim(rng, int(rng.choice(sides)), max_dim) for d in ("M", "N", "K")}
    read = [1, 2, 3, 4, 5, 6, 8, 10]
    energy = {
        "ifmap_read_pj": int(rng.choice(read)),
        "filter_read_pj": int(rng.choice(read)),
        "ofmap_write_pj": int(rng.choice([1, 2, 4, 6, 8, 12, 16, 20])),
    }
    if rng.random() < 0.25:
        gemm["N"] = gemm["M"]
        energy["filter_read_pj"] = energy["ifmap_read_pj"]
    return {"gemm": gemm, "array": array, "energy": energy}


def gen_conv_array(rng: np.random.Generator, max_hw: int = 40, large: bool = False) -> dict[str, Any]:
    """A conv layer (strides that often do not divide) and an array. About a third of the cases set
    num_filters to the number of output pixels, which makes WS and IS tie exactly. ``large`` draws
    channels and num_filters log-uniform in 2^14..2^30 instead (cycles past 2^31 and 2^53), and
    a third of those layers have a filter as large as the input (one output pixel)."""
    while True:
        fh = int(rng.choice([1, 1, 2, 3, 3, 5, 7]))
        fw = fh if rng.random() < 0.8 else int(rng.choice([1, 3, 5]))
        stride = int(rng.choice([1, 1, 2, 2, 3, 4]))
        h = int(rng.integers(fh, max_hw + 1))
        # a square input only when the filter fits it: filter_w <= ifmap_w, as the spec promises
        w = h if rng.random() < 0.6 and h >= fw else int(rng.integers(fw, max_hw + 1))
        p = conv_output_size(h, fh, stride)
        q = conv_output_size(w, fw, stride)
        if p * q <= 1024:
            break
    layer = {
        "ifmap_h": h,
        "ifmap_w": w,
        "filter_h": fh,
        "filter_w": fw,
        "channels": int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64])),
        "num_filters": int(rng.choice([1, 3, 8, 10, 16, 24, 32, 64, 100])),
        "stride": stride,
    }
    if large:
        layer["channels"] = int(2 ** rng.uniform(14, 30))
        layer["num_filters"] = int(2 ** rng.uniform(14, 30))
        if rng.random() < 0.35:  # the filter covers the input: one output pixel
            layer["ifmap_h"], layer["ifmap_w"], p, q = fh, fw, 1, 1
    if rng.random() < 0.33:
        layer["num_filters"] = p * q
    return {"layer": layer, "array": _array(rng)}


REFERENCES = {
    "systolic.os_cycles": os_cycles,
    "systolic.conv_dataflow_cycles": conv_dataflow_cycles,
    "systolic.sram_access_counts": sram_access_counts,
    "systolic.dataflow_sram_energy": dataflow_sram_energy,
}

GENERATORS = {
    "systolic.gemm_array": gen_gemm_array,
    "systolic.gemm_array_dataflow": gen_gemm_array_dataflow,
    "systolic.gemm_array_energy": gen_gemm_array_energy,
    "systolic.conv_array": gen_conv_array,
}
