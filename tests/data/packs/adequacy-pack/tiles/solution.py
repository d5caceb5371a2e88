def tiles(n, t):
    count = -(-n // t)
    return {"tiles": count, "padded": count * t, "waste": count * t - n}
