ORDER = ("os", "ws", "is")


def _ceil_div(a, b):
    return -(-a // b)


def systolic_dataflow_energy(gemm: dict, array: dict, energy: dict) -> dict:
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    out = {key: {} for key in ("ifmap_reads", "filter_reads", "ofmap_writes", "cycles", "energy_pj")}
    edp = {}
    for df in ORDER:
        if df == "os":
            row_folds, col_folds, t = _ceil_div(m, rows), _ceil_div(n, cols), k
            ifmap, filt, ofmap = m * k * col_folds, k * n * row_folds, m * n
            per_fold = t + rows + cols - 2
        elif df == "ws":
            row_folds, col_folds, t = _ceil_div(k, rows), _ceil_div(n, cols), m
            ifmap, filt, ofmap = m * k * col_folds, k * n, m * n * row_folds
            per_fold = t + 2 * rows + cols - 2
        else:
            row_folds, col_folds, t = _ceil_div(k, rows), _ceil_div(m, cols), n
            ifmap, filt, ofmap = m * k, k * n * col_folds, m * n * row_folds
            per_fold = t + 2 * rows + cols - 2
        cycles = row_folds * col_folds * per_fold - 1
        e = ifmap * energy["ifmap_read_pj"] + filt * energy["filter_read_pj"] + ofmap * energy["ofmap_write_pj"]
        out["ifmap_reads"][df] = ifmap
        out["filter_reads"][df] = filt
        out["ofmap_writes"][df] = ofmap
        out["cycles"][df] = cycles
        out["energy_pj"][df] = e
        edp[df] = cycles
    best = ORDER[0]
    for df in ORDER[1:]:
        if edp[df] < edp[best]:
            best = df
    out["best_dataflow"] = best
    return out
