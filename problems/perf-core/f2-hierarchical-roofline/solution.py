from fractions import Fraction

_UNIT_BYTES_PER_S = {"GB/s": 10**9, "GiB/s": 2**30}


def _packed_bytes(elements, bits):
    return (elements * bits + 7) // 8


def _bytes_per_s(level, clock_mhz):
    if level["unit"] == "B/cycle":
        return level["bandwidth"] * clock_mhz * 10**6
    return level["bandwidth"] * _UNIT_BYTES_PER_S[level["unit"]]


def roofline_hierarchical(kernel: dict, hw: dict) -> dict:
    flops = 2 * kernel["macs"]
    peak = 2 * hw["macs_per_cycle"] * hw["clock_mhz"] * 10**6
    t_compute = Fraction(flops, peak)
    level_bytes, intensity, ridge = [], [], []
    bound, latency = "compute", t_compute
    for level, traffic in zip(hw["levels"], kernel["traffic"]):
        nbytes = (_packed_bytes(traffic["input_elements"], kernel["input_bits"])
                  + _packed_bytes(traffic["weight_elements"], kernel["weight_bits"])
                  + _packed_bytes(traffic["output_elements"], kernel["output_bits"]))
        bw = _bytes_per_s(level, hw["clock_mhz"])
        level_bytes.append(nbytes)
        intensity.append(float(Fraction(flops, nbytes)))
        ridge.append(float(Fraction(peak, bw)))
        t = Fraction(nbytes, bw)
        if t > latency:
            bound, latency = level["name"], t
    return {
        "flops": flops,
        "peak_gflops": peak / 1e9,
        "level_bytes": level_bytes,
        "intensity": intensity,
        "ridge_point": ridge,
        "attainable_gflops": float(Fraction(flops) / latency / 10**9),
        "latency_us": float(latency * 10**6),
        "bound": bound,
    }
