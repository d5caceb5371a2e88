def _ceil_div(a, b):
    return -(-a // b)


def systolic_sram_accesses(gemm: dict, array: dict, dataflow: str) -> dict:
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    if dataflow == "os":
        row_folds, col_folds = _ceil_div(m, rows), _ceil_div(n, cols)
        ifmap = m * k * col_folds
        filt = k * n * row_folds
        ofmap = m * n
    elif dataflow == "ws":
        row_folds, col_folds = _ceil_div(k, rows), _ceil_div(n, cols)
        ifmap = m * k * col_folds
        filt = k * n
        ofmap = m * n
    elif dataflow == "is":
        row_folds, col_folds = _ceil_div(k, rows), _ceil_div(m, cols)
        ifmap = m * k
        filt = k * n * col_folds
        ofmap = m * n
    else:
        raise ValueError(f"unknown dataflow {dataflow!r}")
    return {
        "row_folds": row_folds,
        "col_folds": col_folds,
        "ifmap_reads": ifmap,
        "filter_reads": filt,
        "ofmap_writes": ofmap,
    }
