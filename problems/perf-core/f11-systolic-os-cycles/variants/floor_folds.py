def _ceil_div(a, b):
    return -(-a // b)


def systolic_os_cycles(gemm: dict, array: dict) -> dict:
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    rows, cols = array["rows"], array["cols"]
    row_folds = max(1, m // rows)
    col_folds = max(1, n // cols)
    folds = row_folds * col_folds
    cycles = folds * (k + rows + cols - 2) - 1
    return {
        "row_folds": row_folds,
        "col_folds": col_folds,
        "folds": folds,
        "cycles": cycles,
        "mapping_efficiency": (m * n) / (folds * rows * cols),
        "utilization": (m * n * k) / (rows * cols * cycles),
    }
