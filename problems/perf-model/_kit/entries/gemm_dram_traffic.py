def gemm_dram_traffic(workload, architecture, mapping):
    d = _levels(workload, architecture, mapping)[-1]
    return {"I_reads": d["I"]["reads"], "W_reads": d["W"]["reads"],
            "O_updates": d["O"]["updates"], "O_reads": d["O"]["reads"]}
