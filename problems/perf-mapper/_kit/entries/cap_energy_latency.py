

def map_gemm(workload, architecture, latency_cap):
    return capped_search(workload, architecture, "energy", latency_cap)
