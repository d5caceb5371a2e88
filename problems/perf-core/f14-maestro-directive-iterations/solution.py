def _ceil_div(a, b):
    return -(-a // b)


def directive_iterations(dims: dict, dataflow: list, num_pes: int) -> dict:
    iterations = []
    busy = []
    for d in dataflow:
        extent = dims[d["dim"]]
        if d["kind"] == "TemporalMap":
            iterations.append(_ceil_div(extent, d["offset"]))
        elif d["kind"] == "SpatialMap":
            n_iter = _ceil_div(extent, d["offset"] * num_pes)
            iterations.append(n_iter)
            chunks = _ceil_div(extent, d["offset"])
            busy = [min(num_pes, chunks - i * num_pes) for i in range(n_iter)]
        else:
            raise ValueError(f"unknown directive {d['kind']!r}")
    total = 1
    for it in iterations:
        total *= it
    return {
        "iterations": iterations,
        "total_steps": total,
        "busy_pes": busy,
        "utilization": sum(busy) / (len(busy) * num_pes),
    }
