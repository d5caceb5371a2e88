def conv_dram_bytes(workload, architecture, mapping):
    d = _levels(workload, architecture, mapping)[-1]
    b = workload["bits"]
    return {"I_read_bytes": _nbytes(d["I"]["reads"], b["I"]), "W_read_bytes": _nbytes(d["W"]["reads"], b["W"]),
            "O_write_bytes": _o_write_bytes(d, b), "O_read_bytes": _psum_bytes(d["O"]["reads"], b)}
