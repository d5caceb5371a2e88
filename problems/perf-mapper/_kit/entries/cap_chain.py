

def map_chain(workloads, architecture, latency_cap):
    return chain_search(workloads, architecture, latency_cap)
