# A mapper for a chain of layers run in fused groups on a GLB over DRAM. The groups run one after
# the other, so the objective is a sum over groups and each group's room is checked on its own:
# the best tile of every possible group (every run of consecutive layers) is found by scoring every
# tile at once with numpy, and the best cut of the chain by trying all of them. Mistake switches
# and search strategies are read from FLAGS.
import itertools
import math
import random

import numpy as np

FLAGS: dict = {}
BIG = np.iinfo(np.int64).max


def _cdiv(x, y):
    return -(-x // y)


class Chain:
    def __init__(self, chain, arch):
        self.layers = chain["layers"]
        self.n = len(self.layers)
        self.gemm = self.layers[0]["shape"] == "gemm"
        if "residuals" in chain:  # (s, e): the input of layer s is added to the output of layer e
            self.residuals = [tuple(r) for r in chain["residuals"]]
        else:
            self.residuals = [(0, self.n - 1)] if chain.get("residual") else []
        self.walks = {}
        glb, dram = arch["levels"]
        self.cap = glb["capacity_bytes"]
        self.mb = 1 if FLAGS.get("single_buffered") else glb.get("multiple_buffering", 1)
        self.mpc = glb["fanout"][0] * glb["fanout"][1]
        self.bw = dram.get("bytes_per_cycle", 1)
        self.keys = ("M", "N") if self.gemm else ("P", "Q")

    # per-layer facts
    def cin(self, j):
        d = self.layers[j]["dims"]
        return d["K"] if self.gemm else d["C"]

    def cout(self, j):
        wl = self.layers[j]
        d = wl["dims"]
        return d["N"] if self.gemm else (d["K"] if wl["shape"] == "conv" else d["C"])

    def wbytes(self, j):
        wl = self.layers[j]
        d = wl["dims"]
        if self.gemm:
            return d["K"] * d["N"]
        return d["R"] * d["S"] * d["C"] * (d["K"] if wl["shape"] == "conv" else 1)

    def bounds(self, b):
        d = self.layers[b]["dims"]
        return (d["M"], d["N"]) if self.gemm else (d["P"], d["Q"])

    # conv: needed input positions along one axis, per layer of group a..b, for every tile size.
    # Walking back from layer b's tiles gives the same footprints whatever the group's first
    # layer, so each (b, axis) is walked once, for every layer down to 0, and sliced.
    def axis(self, a, b, ax, sizes):
        key = (b, ax)
        if key not in self.walks:
            out = self.layers[b]["dims"]["PQ"[ax]]
            n_sizes = self.bounds(b)[ax]
            tot = np.zeros((b + 1, n_sizes), dtype=np.int64)
            big = np.zeros((b + 1, n_sizes), dtype=np.int64)
            for i, t in enumerate(range(1, n_sizes + 1)):
                for lo in range(0, out, t):
                    need = set(range(lo, min(lo + t, out)))
                    for j in range(b, -1, -1):
                        wl = self.layers[j]
                        st, dl, pd = wl["stride"][ax], wl["dilation"][ax], wl["padding"][ax]
                        lim = wl["input_hw"][ax]
                        if FLAGS.get("no_halo"):
                            need = {min(o * st, lim - 1) for o in need}
                        else:
                            taps = [r * dl - pd for r in range(wl["dims"]["RS"[ax]])]
                            need = {h for o in need for h in (o * st + t2 for t2 in taps) if 0 <= h < lim}
                        tot[j, i] += len(need)
                        big[j, i] = max(big[j, i], len(need))
            self.walks[key] = tot, big
        tot, big = self.walks[key]
        idx = np.asarray(sizes, dtype=np.int64) - 1
        return tot[a:, idx], big[a:, idx]

    def conv_cost(self, a, b, tp, tq):
        """(objective, room) arrays over tp (column vector) x tq (row vector)."""
        P, Q = self.bounds(b)
        K = self.cout(b)
        rt, rb = self.axis(a, b, 0, tp.ravel().tolist())
        ct, cb = self.axis(a, b, 1, tq.ravel().tolist())
        w = sum(self.wbytes(j) for j in range(a, b + 1))
        out_tile = np.minimum(tp, P) * np.minimum(tq, Q) * K
        traffic = w + rt[0][:, None] * ct[0][None, :] * self.cin(a) + P * Q * K
        if FLAGS.get("halo_reused"):  # as if a tile kept what the previous one read
            first = self.layers[a]
            traffic = traffic - rt[0][:, None] * ct[0][None, :] * self.cin(a) \
                + first["input_hw"][0] * first["input_hw"][1] * self.cin(a)
        room = w + self.mb * rb[0][:, None] * cb[0][None, :] * self.cin(a) + self.mb * out_tile
        for j in range(a + 1, b + 1):
            room = room + rb[j - a][:, None] * cb[j - a][None, :] * self.cin(j)
        for s, e in self.residuals:
            if a <= e <= b and s < a and not FLAGS.get("shortcut_free"):
                # the source is in DRAM: each tile reads it at its footprint of e's output
                if e == b:
                    traffic = traffic + P * Q * K
                    room = room + self.mb * out_tile
                else:
                    i, k = e + 1 - a, self.cout(e)
                    traffic = traffic + rt[i][:, None] * ct[i][None, :] * k
                    room = room + self.mb * rb[i][:, None] * cb[i][None, :] * k
            elif a < s <= b < e and not FLAGS.get("shortcut_free"):
                # the source is an intermediate here, read by a later group: written out once
                hw = self.layers[s]["input_hw"]
                traffic = traffic + hw[0] * hw[1] * self.cin(s)
        return traffic, room

    def gemm_cost(self, a, b, tm, tn):
        """(latency, room) for tm, tn arrays that broadcast together."""
        M, N = self.bounds(b)
        kb = self.layers[b]["dims"]["K"]
        ka = self.cin(a)
        early = sum(self.wbytes(j) for j in range(a, b))
        tm = np.minimum(tm, M)
        tn = np.minimum(tn, N)
        nm, nn = _cdiv(M, tm), _cdiv(N, tn)
        lat = 0
        for m, cm in ((tm, nm - 1), (M - (nm - 1) * tm, 1)):
            for n, cn in ((tn, nn - 1), (N - (nn - 1) * tn, 1)):
                macs = m * early + m * kb * n
                if FLAGS.get("weights_once"):
                    byts = m * ka + m * n + (early + kb * N) // (nm * nn)
                else:
                    byts = m * ka + early + kb * n + m * n
                if FLAGS.get("input_kept"):  # as if the input stayed for the next run of features
                    byts = byts - m * ka + _cdiv(m * ka, nn)
                lat = lat + cm * cn * np.maximum(_cdiv(macs, self.mpc), _cdiv(byts, self.bw))
        mid = sum(self.cin(j) for j in range(a + 1, b + 1))
        room = self.mb * tm * ka + tm * mid + self.mb * tm * tn
        return lat, room

    def cost(self, a, b, t0, t1):
        """One group's (objective, room) for one tile, as python ints."""
        f = self.gemm_cost if self.gemm else self.conv_cost
        v, r = f(a, b, np.asarray([[t0]]), np.asarray([[t1]]))
        return int(np.asarray(v).ravel()[0]), int(np.asarray(r).ravel()[0])

    # the exact search
    def best_group(self, a, b):
        n0, n1 = self.bounds(b)
        best = None
        if self.gemm:
            tn = np.arange(1, n1 + 1, dtype=np.int64)[None, :]
            for lo in range(1, n0 + 1, 32):
                tm = np.arange(lo, min(lo + 32, n0 + 1), dtype=np.int64)[:, None]
                v, r = self.gemm_cost(a, b, tm, tn)
                v = np.where(r <= self.cap, v, BIG)
                i, k = np.unravel_index(int(np.argmin(v)), v.shape)
                if v[i, k] < BIG and (best is None or v[i, k] < best[0]):
                    best = (int(v[i, k]), int(tm[i, 0]), int(k + 1))
            return best
        tp = np.arange(1, n0 + 1, dtype=np.int64)[:, None]
        tq = np.arange(1, n1 + 1, dtype=np.int64)[None, :]
        v, r = self.conv_cost(a, b, tp, tq)
        v = np.where(r <= self.cap, v, BIG)
        i, k = np.unravel_index(int(np.argmin(v)), v.shape)
        return (int(v[i, k]), int(i + 1), int(k + 1)) if v[i, k] < BIG else None


def cuts(n):
    for mask in range(2 ** (n - 1)):
        groups, a = [], 0
        for i in range(n - 1):
            if mask >> i & 1:
                groups.append((a, i))
                a = i + 1
        groups.append((a, n - 1))
        yield groups


def as_mapping(ch, groups, tiles):
    return {"groups": [{"layers": b - a + 1, "tile": {ch.keys[0]: int(t[0]), ch.keys[1]: int(t[1])}}
                       for (a, b), t in zip(groups, tiles)]}


def exhaustive(ch):
    memo = {}
    best, best_map = math.inf, None
    for groups in cuts(ch.n):
        parts = []
        for g in groups:
            if g not in memo:
                memo[g] = ch.best_group(*g)
            parts.append(memo[g])
        if None in parts:
            continue
        v = sum(p[0] for p in parts)
        if v < best:
            best, best_map = v, as_mapping(ch, groups, [p[1:] for p in parts])
    return best_map


def value(ch, groups, tiles):
    """The objective of a whole mapping, math.inf when a group does not fit."""
    total = 0
    for (a, b), (t0, t1) in zip(groups, tiles):
        v, r = ch.cost(a, b, t0, t1)
        if r > ch.cap:
            return math.inf
        total += v
    return total


def smallest(ch):
    groups = [(j, j) for j in range(ch.n)]
    return groups, [(1, 1)] * ch.n


def random_search(ch, samples=60, seed=0):
    """Random search: ``samples`` random cuts and tiles, the best valid one kept."""
    rng = random.Random(seed)
    every = list(cuts(ch.n))
    best, best_map = math.inf, None
    for _ in range(samples):
        groups = rng.choice(every)
        tiles = [tuple(rng.randint(1, x) for x in ch.bounds(b)) for _, b in groups]
        v = value(ch, groups, tiles)
        if v < best:
            best, best_map = v, as_mapping(ch, groups, tiles)
    return best_map or as_mapping(ch, *smallest(ch))


def greedy_search(ch):
    """Greedy: from every layer its own group with one-position tiles, take the move that helps
    most (double one tile axis of one group, or merge two neighbouring groups) while one helps."""
    groups, tiles = smallest(ch)
    cur = value(ch, groups, tiles)
    while True:
        moves = []
        for g, (a, b) in enumerate(groups):
            bound = ch.bounds(b)
            for ax in (0, 1):
                t = list(tiles[g])
                t[ax] = min(bound[ax], t[ax] * 2)
                moves.append((groups, tiles[:g] + [tuple(t)] + tiles[g + 1:]))
            if g + 1 < len(groups):
                merged = groups[:g] + [(a, groups[g + 1][1])] + groups[g + 2:]
                moves.append((merged, tiles[:g] + tiles[g + 1:]))
        scored = [(value(ch, gs, ts), gs, ts) for gs, ts in moves]
        v, gs, ts = min(scored, key=lambda x: x[0])
        if v >= cur:
            break
        cur, groups, tiles = v, gs, ts
    return as_mapping(ch, groups, tiles)


def search(chain, arch):
    ch = Chain(chain, arch)
    how = FLAGS.get("search", "exhaustive")
    if how == "random":
        return random_search(ch)
    if how == "greedy":
        return greedy_search(ch)
    return exhaustive(ch)
