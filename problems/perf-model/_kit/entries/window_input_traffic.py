def window_input_traffic(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {"I_tile": {x["name"]: x["tile"]["I"] for x in lv},
            "I_fills": {x["name"]: x["I"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv}}
