ORDER = ("os", "ws", "is")


def _ceil_div(a, b):
    return -(-a // b)


def _out(size, kernel, stride):
    return (size - kernel) // stride + 1


def systolic_conv_dataflows(layer: dict, array: dict) -> dict:
    p = _out(layer["ifmap_h"], layer["filter_h"], layer["stride"])
    q = _out(layer["ifmap_w"], layer["filter_w"], layer["stride"])
    m = p * q
    n = layer["num_filters"]
    k = layer["filter_h"] * layer["filter_w"] * layer["channels"]
    rows, cols = array["rows"], array["cols"]

    shapes = {"os": (m, n, k), "ws": (k, n, m), "is": (k, m, n)}
    folds, cycles = {}, {}
    for df in ORDER:
        sr, sc, t = shapes[df]
        f = _ceil_div(sr, rows) * _ceil_div(sc, cols)
        per_fold = t + rows + cols - 2 if df == "os" else t + 2 * rows + cols - 2
        folds[df] = f
        cycles[df] = f * per_fold - 1

    best = ORDER[0]
    for df in ORDER[1:]:
        if folds[df] < folds[best]:
            best = df
    return {
        "P": p,
        "Q": q,
        "M": m,
        "N": n,
        "K": k,
        "folds": folds,
        "cycles": cycles,
        "best_dataflow": best,
        "best_utilization": (m * n * k) / (rows * cols * cycles[best]),
    }
