

def map_gemm(workload, architecture, energy_cap):
    return capped_search(workload, architecture, "cycles", energy_cap)
