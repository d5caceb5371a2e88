def map_layer(workload, architecture, holds, latency_cap):
    return search(workload, architecture, holds, "energy", seeds=6, kicks=60, limit=("cycles", latency_cap))
