def _transfer(nbytes, per_cycle, setup):
    return setup + (nbytes + per_cycle - 1) // per_cycle


def pipeline_latency(tiles: list, dma: dict, buffers: int) -> dict:
    n = len(tiles)
    load = [_transfer(t["load_bytes"], dma["load_bytes_per_cycle"], dma["setup_cycles"]) for t in tiles]
    store = [_transfer(t["store_bytes"], dma["store_bytes_per_cycle"], dma["setup_cycles"]) for t in tiles]
    comp = [t["compute_cycles"] for t in tiles]

    load_end, comp_start, comp_end, store_end = [], [], [], []
    for i in range(n):
        start = load_end[i - 1] if i > 0 else 0
        if i - buffers >= 0:
            start = max(start, comp_end[i - buffers])       # input slot freed by compute i-B
        load_end.append(start + load[i])

        start = load_end[i]
        if i > 0:
            start = max(start, comp_end[i - 1])
        if i - buffers >= 0:
            start = max(start, store_end[i - buffers])      # output slot freed by store i-B
        comp_start.append(start)
        comp_end.append(start + comp[i])

        start = comp_end[i]
        if i > 0:
            start = max(start, store_end[i - 1])
        store_end.append(start + store[i])

    # lock-step stages: load 0, then one step per tile, then the last store
    comp_start = []
    t = load[0]
    for i in range(n):
        comp_start.append(t)
        t += max(comp[i], load[i + 1] if i + 1 < n else 0, store[i - 1] if i > 0 else 0)
    total = t + store[-1]
    return {
        "total_cycles": total,
        "compute_start": comp_start,
        "serial_cycles": sum(load) + sum(comp) + sum(store),
        "compute_utilization": sum(comp) / total,
    }
