def _ceil_div(a, b):
    return -(-a // b)


def _level(directives, extents, units):
    iterations = []
    busy = []
    for d in directives:
        e = extents[d["dim"]]
        if d["kind"] == "TemporalMap":
            iterations.append(_ceil_div(e, d["offset"]))
        else:
            n_iter = _ceil_div(e, d["offset"] * units)
            chunks = _ceil_div(e, d["offset"])
            iterations.append(n_iter)
            busy = [min(units, chunks - i * units) for i in range(n_iter)]
    steps = 1
    for it in iterations:
        steps *= it
    return iterations, steps, sum(busy) / (len(busy) * units)


def cluster_iterations(dims: dict, dataflow: list, num_pes: int) -> dict:
    cut = next(i for i, d in enumerate(dataflow) if d["kind"] == "Cluster")
    n = dataflow[cut]["size"]
    outer, inner = dataflow[:cut], dataflow[cut + 1:]
    num_clusters = num_pes // n

    outer_its, outer_steps, outer_util = _level(outer, dims, num_clusters)
    inner_extents = {d["dim"]: min(d["size"], dims[d["dim"]]) for d in outer}
    inner_its, inner_steps, inner_util = _level(inner, inner_extents, n)
    return {
        "num_clusters": num_clusters,
        "inner_extents": inner_extents,
        "iterations": outer_its + inner_its,
        "outer_steps": outer_steps,
        "inner_steps": inner_steps,
        "total_steps": outer_steps * inner_steps,
        "utilization": inner_util,
    }
