

def map_gemm(workload, architecture):
    return search(workload, architecture, "energy")
