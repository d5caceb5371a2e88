def double(x):
    return {"y": 2 * x, "n": abs(x)}
