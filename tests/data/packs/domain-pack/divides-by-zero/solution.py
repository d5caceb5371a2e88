def ratio(a, b):
    return {"q": a // b, "r": a / b}
