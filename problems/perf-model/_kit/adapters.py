"""Per-problem adapters: the problem's entry point on top of an ``analyze`` (the analytical
engine in solutions and variants, the brute-force simulator in simulator.py), and the variants
of each problem as engine switches (see build.py)."""

PRELUDE = '''

# ---- the problem's entry point -----------------------------------------------------------

def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _o_write_bytes(lv, bits):
    final = 0 if FLAGS.get("all_partial") else lv["O"]["final_updates"]
    if FLAGS.get("psum_as_output"):
        return _nbytes(lv["O"]["updates"], bits["O"])
    return _nbytes(final, bits["O"]) + _nbytes(lv["O"]["updates"] - final, bits["psum"])


def _psum_bytes(n, bits):
    return _nbytes(n, bits["O"] if FLAGS.get("psum_as_output") else bits["psum"])


def _levels(workload, architecture, mapping):
    res = analyze(workload, architecture, mapping)
    if FLAGS.get("per_instance"):
        for lv in res["levels"]:
            n = max(1, lv["used_instances"])
            for t in ("I", "W", "O"):
                lv[t] = {k: v // n for k, v in lv[t].items()}
    return res["levels"]
'''

ADAPTERS = {
    "gemm_dram_traffic": '''
def gemm_dram_traffic(workload, architecture, mapping):
    d = _levels(workload, architecture, mapping)[-1]
    return {"I_reads": d["I"]["reads"], "W_reads": d["W"]["reads"],
            "O_updates": d["O"]["updates"], "O_reads": d["O"]["reads"]}
''',
    "conv_dram_bytes": '''
def conv_dram_bytes(workload, architecture, mapping):
    d = _levels(workload, architecture, mapping)[-1]
    b = workload["bits"]
    return {"I_read_bytes": _nbytes(d["I"]["reads"], b["I"]), "W_read_bytes": _nbytes(d["W"]["reads"], b["W"]),
            "O_write_bytes": _o_write_bytes(d, b), "O_read_bytes": _psum_bytes(d["O"]["reads"], b)}
''',
    "attention_dram_bytes": '''
def attention_dram_bytes(workload, architecture, mapping):
    d = _levels(workload, architecture, mapping)[-1]
    b = workload["bits"]
    return {"I_read_bytes": _nbytes(d["I"]["reads"], b["I"]), "W_read_bytes": _nbytes(d["W"]["reads"], b["W"]),
            "O_write_bytes": _o_write_bytes(d, b), "O_read_bytes": _psum_bytes(d["O"]["reads"], b)}
''',
    "window_input_traffic": '''
def window_input_traffic(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {"I_tile": {x["name"]: x["tile"]["I"] for x in lv},
            "I_fills": {x["name"]: x["I"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv}}
''',
    "level_accesses": '''
def level_accesses(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {a: {f"{x['name']}.{t}": x[t][a] for x in lv for t in ("I", "W", "O")}
            for a in ("reads", "fills", "updates")}
''',
    "psum_traffic": '''
def psum_traffic(workload, architecture, mapping):
    b = workload["bits"]
    holders = [x for x in _levels(workload, architecture, mapping) if "O" in x["keeps"]][1:]
    return {"O_complete": {x["name"]: 0 if FLAGS.get("all_partial") else x["O"]["final_updates"] for x in holders},
            "O_update_bytes": {x["name"]: _o_write_bytes(x, b) for x in holders},
            "O_read_bytes": {x["name"]: _psum_bytes(x["O"]["reads"], b) for x in holders}}
''',
    "weight_stationary": '''
def weight_stationary(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {"W_fills": {x["name"]: x["W"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv},
            "O_updates": {x["name"]: x["O"]["updates"] for x in lv},
            "O_reads": {x["name"]: x["O"]["reads"] for x in lv}}
''',
}

# problem id -> (adapter, {variant file stem: engine / adapter switches})
PROBLEMS = {
    "f4-gemm-dram-traffic": ("gemm_dram_traffic", {
        "no_reuse": {"no_reuse": True},
        "outer_to_inner": {"outer_first": True},
        "first_read_counted": {"first_read": True},
        "padded_ragged_tiles": {"no_ragged": True},
    }),
    "f4-conv-dram-bytes": ("conv_dram_bytes", {
        "refetch_whole_tile": {"refetch": True},
        "padding_moved": {"padded": True},
        "first_read_counted": {"first_read": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "halo_off_by_one": {"halo_plus_one": True},
        "outer_to_inner": {"outer_first": True},
    }),
    "f6-window-input-traffic": ("window_input_traffic", {
        "refetch_whole_tile": {"refetch": True},
        "span_ignores_dilation": {"span_ignores_dilation": True},
        "span_ignores_stride": {"span_ignores_stride": True},
        "padding_moved": {"padded": True},
        "halo_off_by_one": {"halo_plus_one": True},
        "multicast_per_destination": {"no_multicast": True},
        "outer_to_inner": {"outer_first": True},
    }),
    "f5-depthwise-bypass-accesses": ("level_accesses", {
        "bypass_ignored": {"ignore_bypass": True},
        "first_read_counted": {"first_read": True},
        "refetch_whole_tile": {"refetch": True},
        "padding_moved": {"padded": True},
        "outer_to_inner": {"outer_first": True},
        "padded_ragged_tiles": {"no_ragged": True},
    }),
    "f7-simba-fanout-accesses": ("level_accesses", {
        "multicast_per_destination": {"no_multicast": True},
        "no_spatial_reduction": {"no_reduction": True},
        "per_instance_counts": {"per_instance": True},
        "partition_ignores_replication": {"partition_no_replication": True},
        "first_read_counted": {"first_read": True},
        "bypass_ignored": {"ignore_bypass": True},
    }),
    "f4-psum-traffic-bytes": ("psum_traffic", {
        "psum_at_output_precision": {"psum_as_output": True},
        "every_write_back_partial": {"all_partial": True},
        "first_read_counted": {"first_read": True},
        "padded_ragged_tiles": {"no_ragged": True},
        "no_spatial_reduction": {"no_reduction": True},
    }),
    "f5-weight-stationary-gemm": ("weight_stationary", {
        "multicast_per_destination": {"no_multicast": True},
        "no_spatial_reduction": {"no_reduction": True},
        "no_reuse": {"no_reuse": True},
        "first_read_counted": {"first_read": True},
        "outer_to_inner": {"outer_first": True},
    }),
    "f15-kv-cache-attention-bytes": ("attention_dram_bytes", {
        "kv_heads_not_shared": {"gqa_ignored": True},
        "outer_to_inner": {"outer_first": True},
        "first_read_counted": {"first_read": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "padded_ragged_tiles": {"no_ragged": True},
    }),
}
