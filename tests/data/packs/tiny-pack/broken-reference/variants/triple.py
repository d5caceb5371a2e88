def double(x):
    return {"y": 3 * x, "half": x / 2}
