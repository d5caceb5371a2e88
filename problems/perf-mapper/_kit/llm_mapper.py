# A mapper for one LLM layer (a GEMM, or a batched product of attention against a KV cache) on a
# TPU-like or an NVDLA-like accelerator, in the format of the pack's FORMAT.md, each level holding
# the tensors ``holds`` names. The counts are closed forms of the format's semantics for exact
# factorisations with one temporal loop per dimension per level and at most one spatial loop per
# axis: a tile is refetched every time a loop above it advances, except along the innermost run of
# loops irrelevant to it; the reads of a parent are its children's fills divided by the multicast
# (spatial loops irrelevant to the tensor between them); outputs leave a level's children as partial
# sums and come back as read-backs. The space is too large to judge point by point (every split of
# every dimension over every level and array axis, and every loop order), so the search is a best
# improvement local search (move any divisor of one loop's factor to another loop, swap two loops
# of a level) from the all-at-DRAM point and seeded random ones, then many kicks (a few random moves
# from the best point and a climb again). With a DRAM port (``bytes_per_cycle``) the cycles are the
# larger of the time steps and the port's whole cycles for every byte crossing it; one quantity can
# be capped (``limit``): a point over the cap is worth far more than any under it, more the further
# over, so a climb first gets under the cap. Mistake switches and search strategies are read from FLAGS.
import math
import random

FLAGS: dict = {}
PENALTY = 1e30  # the value of a point over a cap: 1e30 times (1 + the relative excess)
SLACK = 1e-9  # an energy within this (relative) of an energy cap is under it

SHAPE_DIMS = {"gemm": ("M", "N", "K"), "bmm": ("B", "G", "H", "M", "N", "K")}
RELEVANT = {
    "gemm": {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")},
    "bmm": {"I": ("B", "G", "H", "M", "K"), "W": ("B", "G", "K", "N"), "O": ("B", "G", "H", "M", "N")},
}
TENSORS = ("I", "W", "O")


def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _divisors(n):
    return [k for k in range(2, n + 1) if n % k == 0]


def _primes(n):
    """The prime factors of n with their multiplicity, smallest first."""
    p = next((k for k in range(2, n + 1) if n % k == 0), None)
    return [] if p is None else [p] + _primes(n // p)


class Problem:
    """The instance, the slots a factor can go to and the closed-form cost of a point."""

    def __init__(self, workload, architecture, holds, objective, limit=None):
        self.dims = SHAPE_DIMS[workload["shape"]]
        self.size = dict(workload["dims"])
        self.bits = dict(workload["bits"])
        self.rel = {t: frozenset(v) for t, v in RELEVANT[workload["shape"]].items()}
        self.levels = architecture["levels"]
        self.depth = len(self.levels)
        self.holds = [frozenset(h) for h in holds]
        self.objective = objective  # energy, edp or cycles (time steps, or DRAM's port when slower)
        self.limit = None if FLAGS.get("no_cap") else limit  # (quantity, cap): the other one capped
        last = self.depth - 1
        self.slots = []  # (level, kind) innermost first: x, y, then the temporal loop of each level
        for lv, arch in enumerate(self.levels):
            fx, fy = arch.get("fanout", [1, 1])
            if lv < last and fx > 1:
                self.slots.append((lv, "x"))
            if lv < last and fy > 1:
                self.slots.append((lv, "y"))
            self.slots.append((lv, "t"))
        self.cap = {}
        for i, (lv, kind) in enumerate(self.slots):
            if kind != "t":
                self.cap[i] = self.levels[lv]["fanout"][0 if kind == "x" else 1]
        self.macs = math.prod(self.size.values())
        self.holders = {t: [lv for lv in range(self.depth) if t in self.holds[lv]] for t in TENSORS}
        self.temporal = [i for i, (_, k) in enumerate(self.slots) if k == "t"]
        self.seen = {}

    # a point: f[d] = list of factors per slot, order[lv] = dims innermost first
    def loops(self, f, order):
        """Loops innermost first: (dim, factor, level, kind)."""
        out = []
        for i, (lv, kind) in enumerate(self.slots):
            if kind != "t":
                for d in self.dims:
                    if f[d][i] > 1:
                        out.append((d, f[d][i], lv, kind))
            else:
                for d in order[lv]:
                    if f[d][i] > 1:
                        out.append((d, f[d][i], lv, "t"))
        return out

    def cost(self, f, order):
        """(objective, energy, cycles), objective math.inf when a capacity is exceeded."""
        loops = self.loops(f, order)
        size, bits, rel, last = self.size, self.bits, self.rel, self.depth - 1
        ext = [{d: 1 for d in self.dims} for _ in range(self.depth)]
        for d, fac, lv, _ in loops:
            for up in range(lv, self.depth):
                ext[up][d] *= fac
        psum_bits = bits["O"] if FLAGS.get("psum_as_output") else bits["psum"]
        for lv in range(last):
            arch = self.levels[lv]
            mb = 1 if FLAGS.get("no_buffering") else int(arch.get("multiple_buffering", 1))
            need = {t: mb * _nbytes(math.prod(ext[lv][d] for d in rel[t]), psum_bits if t == "O" else bits[t])
                    for t in self.holds[lv]}
            cap = arch["capacity_bytes"]
            if isinstance(cap, dict):
                if any(need[t] > cap[t] for t in need):
                    return math.inf, math.inf, math.inf
            elif sum(need.values()) > cap:
                return math.inf, math.inf, math.inf
        temporal = [(d, fac, lv) for d, fac, lv, k in loops if k == "t"]
        spatial = [(d, fac, lv) for d, fac, lv, k in loops if k != "t"]
        steps = math.prod(fac for _, fac, _ in temporal)

        def changes(t, c):
            total, reuse, clear = 1, 1, True
            for d, fac, lv in temporal:
                if lv <= c:
                    continue
                total *= fac
                if clear and d not in rel[t]:
                    reuse *= fac
                elif not FLAGS.get("ignore_order"):
                    clear = False
            return total // reuse

        def sp(t, lo, hi, irrelevant=True):
            return math.prod(fac for d, fac, lv in spatial if lo < lv <= hi and (d not in rel[t]) == irrelevant)

        def inst(c):
            return math.prod(fac for _, fac, lv in spatial if lv > c)

        def tile(t, c):
            return math.prod(ext[c][d] for d in rel[t])

        counts = [{t: [0, 0, 0, 0] for t in TENSORS} for _ in range(self.depth)]  # reads fills updates final
        for t in ("I", "W"):
            hold = self.holders[t]
            mc = 1 if FLAGS.get("no_multicast") else sp(t, -1, hold[0])
            counts[hold[0]][t][0] = self.macs // mc
            for c, p in zip(hold, hold[1:]):
                fills = tile(t, c) * inst(c) * changes(t, c)
                counts[c][t][1] = fills
                counts[p][t][0] = fills // (1 if FLAGS.get("no_multicast") else sp(t, c, p))
                if FLAGS.get("compulsory_dram") and p == last:
                    counts[p][t][0] = math.prod(size[d] for d in rel[t])
        hold = self.holders["O"]
        size_o = math.prod(size[d] for d in rel["O"])
        counts[hold[0]]["O"][2] = self.macs // sp("O", -1, hold[0])
        for c, p in zip(hold, hold[1:]):
            counts[p]["O"][2] = tile("O", c) * inst(c) * changes("O", c) // sp("O", c, p)
            if sp("O", p, last) == 1:
                counts[p]["O"][3] = size_o
        for lv in hold:
            counts[lv]["O"][0] = counts[lv]["O"][2] - size_o * sp("O", lv, last)
        for c, p in zip(hold, hold[1:]):
            counts[c]["O"][1] = counts[p]["O"][0]
        if FLAGS.get("compulsory_dram"):
            counts[last]["O"][0] = counts[hold[-2]]["O"][1] = 0
            counts[last]["O"][2] = counts[last]["O"][3] = size_o
        energy, pb = 0.0, bits["psum"]
        for lv, arch in enumerate(self.levels):
            rp, wp = float(arch["read_pj_per_byte"]), float(arch["write_pj_per_byte"])
            for t in ("I", "W"):
                reads, fills = counts[lv][t][0], counts[lv][t][1]
                if lv == 0:
                    reads = 0  # one read per MAC at the innermost level: the same for every mapping
                energy += rp * _nbytes(reads, bits[t]) + wp * _nbytes(fills, bits[t])
            reads, fills, upd, fin = counts[lv]["O"]
            if lv == 0:
                upd = fin = 0
            energy += rp * _nbytes(reads, pb) + wp * (_nbytes(fills, pb) + _nbytes(fin, bits["O"])
                                                      + _nbytes(upd - fin, pb))
        if self.objective in ("energy", "edp") and self.limit is None:
            return (energy if self.objective == "energy" else energy * steps), energy, steps
        dram = (sum(_nbytes(counts[last][t][0], bits[t]) for t in ("I", "W"))
                + _nbytes(counts[last]["O"][0], pb) + _nbytes(counts[last]["O"][3], bits["O"])
                + _nbytes(counts[last]["O"][2] - counts[last]["O"][3], pb))
        port = 0 if FLAGS.get("no_port") else -(-dram // int(self.levels[last]["bytes_per_cycle"]))
        cycles = max(steps, port)
        if self.limit is not None:
            what, cap = self.limit
            over = (cycles if what == "cycles" else energy) - cap * (1 if what == "cycles" else 1 + SLACK)
            if over > 0:  # far above every value within the cap, growing with the excess
                return PENALTY * (1 + over / cap), energy, cycles
        if self.objective == "cycles":  # equal cycles: the lower energy first (a tie-break below 1)
            return cycles + 0.5 * energy / (energy + self.scale()), energy, cycles
        return (energy if self.objective == "energy" else energy * steps), energy, cycles

    def scale(self):
        """An energy scale for the cycles' tie-break: the all-at-DRAM point's energy (or 1)."""
        if not hasattr(self, "_scale"):
            objective, limit, self.objective, self.limit = self.objective, self.limit, "energy", None
            e = self.cost(*self.all_outside())[1]
            self.objective, self.limit = objective, limit
            self._scale = e if math.isfinite(e) and e > 0 else 1.0
        return self._scale

    # ----- points -----
    def all_outside(self):
        top = len(self.slots) - 1
        f = {d: [1] * len(self.slots) for d in self.dims}
        for d in self.dims:
            f[d][top] = self.size[d]
        return f, [list(self.dims) for _ in range(self.depth)]

    def spatial_ok(self, f, i):
        if i not in self.cap:
            return True
        used = [d for d in self.dims if f[d][i] > 1]
        return len(used) <= 1 and math.prod(f[d][i] for d in used) <= self.cap[i]

    def moved(self, f, d, p, a, b):
        """The point with the factor p of dimension d moved from slot a to slot b (None when b is
        a or an array axis would be shared or overfull)."""
        if a == b:
            return None
        g = dict(f)
        row = list(f[d])
        row[a] //= p
        row[b] *= p
        g[d] = row
        return g if self.spatial_ok(g, b) else None

    def neighbours(self, f, order):
        for d in self.dims:
            for a in range(len(self.slots)):
                if f[d][a] == 1:
                    continue
                for p in _divisors(f[d][a]):
                    for b in range(len(self.slots)):
                        g = self.moved(f, d, p, a, b)
                        if g is not None:
                            yield g, order
        for lv in range(self.depth):
            live = [d for d in order[lv] if f[d][self.temporal[lv]] > 1]
            for x in range(len(live)):
                for y in range(x + 1, len(live)):
                    o = list(order[lv])
                    i, j = o.index(live[x]), o.index(live[y])
                    o[i], o[j] = o[j], o[i]
                    new = list(order)
                    new[lv] = o
                    yield f, new

    def random_point(self, rng):
        f = {d: [1] * len(self.slots) for d in self.dims}
        for d in self.dims:
            for p in _primes(self.size[d]):
                for _ in range(4):
                    b = rng.randrange(len(self.slots))
                    f[d][b] *= p
                    if self.spatial_ok(f, b):
                        break
                    f[d][b] //= p
                else:
                    f[d][-1] *= p
        order = [rng.sample(list(self.dims), len(self.dims)) for _ in range(self.depth)]
        return f, order

    def value(self, f, order):
        """The objective of a point, remembered (a climb after a kick meets the same points again)."""
        key = (tuple(tuple(f[d]) for d in self.dims),
               tuple(tuple(d for d in order[lv] if f[d][self.temporal[lv]] > 1) for lv in range(self.depth)))
        if key not in self.seen:
            self.seen[key] = self.cost(f, order)[0]
        return self.seen[key]

    def climb(self, f, order, budget):
        best = self.value(f, order)
        while budget[0] > 0:
            step = None
            for g, o in self.neighbours(f, order):
                budget[0] -= 1
                v = self.value(g, o)
                if v < best * (1 - 1e-12):
                    best, step = v, (g, o)
            if step is None:
                break
            f, order = step
        return best, f, order

    def mapping(self, f, order):
        levels = [{"temporal": []} for _ in range(self.depth)]
        for d, fac, lv, kind in self.loops(f, order):
            key = {"t": "temporal", "x": "spatial_x", "y": "spatial_y"}[kind]
            levels[lv].setdefault(key, []).append([d, int(fac)])
        return {"levels": levels}


def local_search(prob, starts=12, kicks=300, seed=0, budget=10000000):
    """Best improvement from the all-at-DRAM point and ``starts`` - 1 random ones; then ``kicks`` times
    the best point so far is kicked (three random moves) and climbed again, kept when better."""
    rng = random.Random(seed)
    left = [budget]
    best = (math.inf, None, None)
    for f, order in [prob.all_outside()] + [prob.random_point(rng) for _ in range(starts - 1)]:
        v, f, order = prob.climb(f, order, left)
        if v < best[0] * (1 - 1e-12):
            best = (v, f, order)
    for _ in range(kicks):
        g, o = best[1], best[2]
        for _ in range(3):
            moves = list(prob.neighbours(g, o))
            g, o = rng.choice(moves) if moves else (g, o)
        w, g, o = prob.climb(g, o, left)
        if w < best[0] * (1 - 1e-12):
            best = (w, g, o)
    return best


def deep_search(prob, seeds=8, **kw):
    """The best of ``seeds`` independent local searches (seeds 0 to ``seeds`` - 1): on deep
    hierarchies one run's climbs and kicks end in different basins from one seed to the next."""
    best = (math.inf, None, None)
    for seed in range(seeds):
        found = local_search(prob, seed=seed, **kw)
        if found[0] < best[0] * (1 - 1e-12):
            best = found
    return best


def random_search(prob, samples=60, seed=0, draws=3000):
    """Random points until ``samples`` of them fit (or ``draws`` were drawn); the best kept."""
    rng = random.Random(seed)
    best = (prob.cost(*prob.all_outside())[0],) + prob.all_outside()
    for _ in range(draws):
        f, order = prob.random_point(rng)
        v = prob.cost(f, order)[0]
        samples -= math.isfinite(v)
        if v < best[0]:
            best = (v, f, order)
        if samples <= 0:
            break
    return best


def greedy_search(prob):
    """From every loop outside, moves one prime factor out of the outermost level at a time (to any
    other loop) while that helps most; the loop orders stay as the dims are listed."""
    f, order = prob.all_outside()
    top = len(prob.slots) - 1
    cur = prob.cost(f, order)[0]
    while True:
        step = None
        for d in prob.dims:
            for p in sorted(set(_primes(f[d][top]))):
                for b in range(top):
                    g = prob.moved(f, d, p, top, b)
                    if g is not None:
                        v = prob.cost(g, order)[0]
                        if v < cur * (1 - 1e-12):
                            cur, step = v, g
        if step is None:
            return cur, f, order
        f = step


def search(workload, architecture, holds, objective, seeds=1, kicks=300, limit=None):
    prob = Problem(workload, architecture, holds, objective, limit)
    how = FLAGS.get("search", "local")
    if how == "random":
        _, f, order = random_search(prob)
    elif how == "greedy":
        _, f, order = greedy_search(prob)
    else:
        _, f, order = deep_search(prob, seeds, kicks=kicks)
    return prob.mapping(f, order)
