DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def pe_array_cycles(layer: dict, array: dict, mapping: dict) -> dict:
    factor = dict.fromkeys(DIMS, 1)
    for axis in ("rows", "cols"):
        for entry in mapping[axis]:
            factor[entry["dim"]] *= entry["factor"]
    macs = 1
    cycles = 1
    pes_used = 1
    for d in DIMS:
        macs *= layer[d]
        cycles *= -(-layer[d] // factor[d])
        pes_used *= factor[d]
    pes = array["rows"] * array["cols"]
    return {
        "macs": macs,
        "cycles": cycles,
        "pes_used": pes_used,
        "spatial_utilization": pes_used / pes,
        "mac_utilization": pes_used / pes,
        "latency_us": cycles / array["clock_mhz"],
    }
