def double(x):
    return {"y": 2 * x, "half": x / 2}
