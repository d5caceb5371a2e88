

def map_pipeline(workloads, architecture):
    return pipe_edp(workloads, architecture)
