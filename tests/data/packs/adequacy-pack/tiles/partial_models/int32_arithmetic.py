import numpy as np


def tiles(n, t):
    n32, t32 = np.int64(n).astype(np.int32), np.int64(t).astype(np.int32)
    count = -(-n32 // t32)
    return {"tiles": int(count), "padded": int(count * t32), "waste": int(count * t32 - n32)}
