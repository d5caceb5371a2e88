from fractions import Fraction


def _slowdown(level, compute_cycles):
    inst = level["instances"]
    reads = Fraction(sum(level["reads"].values()), inst)
    writes = Fraction(sum(level["fills"].values()) + level["updates"], inst)
    req_r = reads / compute_cycles
    req_w = writes / compute_cycles
    terms = [Fraction(1)]
    if req_r > 0:
        terms.append(level["read_bandwidth"] / req_r)
    if req_w > 0:
        terms.append(level["write_bandwidth"] / req_w)
    if level["shared_bandwidth"] is not None and req_r + req_w > 0:
        terms.append(level["shared_bandwidth"] / (req_r + req_w))
    return min(terms)


def _ceil(q):
    return -(-q.numerator // q.denominator)


def throttled_latency(compute_cycles: int, clock_mhz: int, levels: list) -> dict:
    slowdowns = [_slowdown(level, compute_cycles) for level in levels]
    level_cycles = [_ceil(compute_cycles / s) for s in slowdowns]
    total = max([compute_cycles] + level_cycles)
    bottleneck = "compute"
    if total > compute_cycles:
        for level, cycles in zip(levels, level_cycles):
            if cycles == total:
                bottleneck = level["name"]
                break
    return {
        "slowdown": [float(s) for s in slowdowns],
        "level_cycles": level_cycles,
        "total_cycles": total,
        "bottleneck": bottleneck,
        "latency_us": total / clock_mhz,
    }
