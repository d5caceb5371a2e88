def weight_stationary(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {"W_fills": {x["name"]: x["W"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv},
            "O_updates": {x["name"]: x["O"]["updates"] for x in lv},
            "O_reads": {x["name"]: x["O"]["reads"] for x in lv}}
