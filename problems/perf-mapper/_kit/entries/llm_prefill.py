def map_layer(workload, architecture, holds):
    return search(workload, architecture, holds, "energy", seeds=6, kicks=60)
