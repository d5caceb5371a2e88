def _ceil_div(a, b):
    return -(-a // b)


def action_energy(accesses: dict, architecture: dict) -> dict:
    mac_energy = accesses["macs"] * architecture["mac_pj"]
    vectors, energies = [], []
    for counts, cost in zip(accesses["levels"], architecture["levels"]):
        block = cost["block_size"]
        # add up the level's reads and its writes first, then round once each
        reads = sum(counts[t]["reads"] for t in ("I", "W", "O"))
        writes = sum(counts[t]["fills"] + counts[t]["updates"] for t in ("I", "W", "O"))
        n = _ceil_div(reads, block) + _ceil_div(writes, block)
        e = _ceil_div(reads, block) * cost["read_pj"] + _ceil_div(writes, block) * cost["write_pj"]
        vectors.append(n)
        energies.append(e)
    total_pj = mac_energy + sum(energies)
    return {
        "mac_energy_pj": mac_energy,
        "level_vectors": vectors,
        "level_energy_pj": energies,
        "total_energy_nj": total_pj / 1000,
    }
