def double(x):
    return {"y": x + x, "half": x * 0.5}
