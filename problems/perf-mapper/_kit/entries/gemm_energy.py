

def map_gemm(workload, architecture, holds):
    return exact_mapper(workload, architecture, holds, "energy")
