

def map_pipeline(workloads, architecture, interval_cap):
    return pipe_energy(workloads, architecture, interval_cap)
