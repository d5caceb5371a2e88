def _ceil_div(a, b):
    return -(-a // b)


def action_energy(accesses: dict, architecture: dict) -> dict:
    mac_energy = accesses["macs"] * architecture["mac_pj"]
    vectors, energies = [], []
    for counts, cost in zip(accesses["levels"], architecture["levels"]):
        block = cost["block_size"]
        n, e = 0, 0.0
        for t in ("I", "W", "O"):
            for action in ("reads", "fills", "updates"):
                v = counts[t][action]  # one access per word
                n += v
                e += v * (cost["read_pj"] if action == "reads" else cost["write_pj"])
        vectors.append(n)
        energies.append(e)
    total_pj = mac_energy + sum(energies)
    return {
        "mac_energy_pj": mac_energy,
        "level_vectors": vectors,
        "level_energy_pj": energies,
        "total_energy_nj": total_pj / 1000,
    }
