def spread(x):
    return {"counts": [x, x + 1], "by_name": {"a": x - 1}}
