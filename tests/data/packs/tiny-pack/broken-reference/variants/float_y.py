def double(x):
    return {"y": 2.0 * x, "half": x / 2}
