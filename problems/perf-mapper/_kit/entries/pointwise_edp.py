def map_layer(workload, architecture, holds):
    return search(workload, architecture, holds, "edp", seeds=6, kicks=60)
