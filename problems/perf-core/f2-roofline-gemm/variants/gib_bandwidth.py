from fractions import Fraction


def _packed_bytes(elements, bits):
    return (elements * bits + 7) // 8


def roofline_gemm(gemm: dict, hw: dict) -> dict:
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    flops = 2 * m * n * k
    dram_bytes = (_packed_bytes(m * k, gemm["input_bits"])
                  + _packed_bytes(k * n, gemm["weight_bits"])
                  + _packed_bytes(m * n, gemm["output_bits"]))
    peak = 2 * hw["macs_per_cycle"] * hw["clock_mhz"] * 10**6      # FLOP/s
    bandwidth = hw["dram_gb_per_s"] * 2**30                        # bytes/s
    t_compute = Fraction(flops, peak)
    t_memory = Fraction(dram_bytes, bandwidth)
    latency = max(t_compute, t_memory)
    intensity = Fraction(flops, dram_bytes)
    attainable = min(Fraction(peak), intensity * bandwidth)
    return {
        "flops": flops,
        "dram_bytes": dram_bytes,
        "intensity": float(intensity),
        "peak_gflops": peak / 1e9,
        "ridge_point": float(Fraction(peak, bandwidth)),
        "attainable_gflops": float(attainable / 10**9),
        "latency_us": float(latency * 10**6),
        "bound": "compute" if t_compute >= t_memory else "memory",
    }
