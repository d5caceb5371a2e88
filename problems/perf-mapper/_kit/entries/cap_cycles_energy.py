def map_layer(workload, architecture, holds, energy_cap):
    return search(workload, architecture, holds, "cycles", seeds=6, kicks=60, limit=("energy", energy_cap))
