"""A brute-force simulator of the format (what a careful engineer would write to check a model):
it steps through every iteration of the loop nest and materialises every tile as a set of
tensor elements, counting what moves. Correct, and hopeless at real sizes.
"""

from __future__ import annotations



import itertools
from collections import defaultdict
from math import prod
from typing import Any

TENSORS = ("I", "W", "O")
SHAPES = {
    "conv": ("N", "K", "C", "P", "Q", "R", "S"),
    "depthwise": ("N", "C", "P", "Q", "R", "S"),
    "gemm": ("M", "N", "K"),
    "bmm": ("B", "G", "H", "M", "N", "K"),
}


class Sim:
    def __init__(self, workload, architecture, mapping):
        shape = workload["shape"]
        self.dims = SHAPES[shape]
        self.bounds = dict(workload["dims"])
        self.bits = dict(workload["bits"])
        if shape in ("conv", "depthwise"):
            self.hin, self.win = workload["input_hw"]
            sh, sw = workload.get("stride", [1, 1])
            dh, dw = workload.get("dilation", [1, 1])
            ph, pw = workload.get("padding", [0, 0])

            def row(v):
                return v["P"] * sh + v["R"] * dh - ph

            def col(v):
                return v["Q"] * sw + v["S"] * dw - pw

            self.window_axes = {"I": (2, 3)}  # which coordinates are input rows / columns
            if shape == "conv":
                self.proj = {"I": lambda v: (v["N"], v["C"], row(v), col(v)),
                             "W": lambda v: (v["K"], v["C"], v["R"], v["S"]),
                             "O": lambda v: (v["N"], v["K"], v["P"], v["Q"])}
            else:
                self.proj = {"I": lambda v: (v["N"], v["C"], row(v), col(v)),
                             "W": lambda v: (v["C"], v["R"], v["S"]),
                             "O": lambda v: (v["N"], v["C"], v["P"], v["Q"])}
        else:
            self.window_axes = {}
            if shape == "gemm":
                self.proj = {"I": lambda v: (v["M"], v["K"]), "W": lambda v: (v["K"], v["N"]),
                             "O": lambda v: (v["M"], v["N"])}
            else:
                self.proj = {"I": lambda v: (v["B"], v["G"], v["H"], v["M"], v["K"]),
                             "W": lambda v: (v["B"], v["G"], v["K"], v["N"]),
                             "O": lambda v: (v["B"], v["G"], v["H"], v["M"], v["N"])}
        levels = architecture["levels"]
        self.depth = len(levels)
        self.names = [lv["name"] for lv in levels]
        self.fanout = [tuple(lv.get("fanout", [1, 1])) for lv in levels]
        self.caps = [lv.get("capacity_bytes") for lv in levels]
        self.mb = [lv.get("multiple_buffering", 1) for lv in levels]
        self.keeps = [set(TENSORS) - set(m.get("bypass", []) or []) for m in mapping["levels"]]
        # the nest, innermost first: (dim, factor, level, spatial?)
        self.loops = []
        for lv, m in enumerate(mapping["levels"]):
            for d, f in m.get("spatial_x", []) or []:
                self.loops.append((d, f, lv, True))
            for d, f in m.get("spatial_y", []) or []:
                self.loops.append((d, f, lv, True))
            for d, f in m.get("temporal", []) or []:
                self.loops.append((d, f, lv, False))
        weight = dict.fromkeys(self.dims, 1)
        self.weight = []
        for d, f, _, _ in self.loops:
            self.weight.append(weight[d])
            weight[d] *= f

    # --- the iteration space ------------------------------------------------------------
    def point(self, digits):
        v = dict.fromkeys(self.dims, 0)
        for i, x in digits.items():
            v[self.loops[i][0]] += x * self.weight[i]
        return v

    def real(self, v):
        return all(v[d] < self.bounds[d] for d in self.dims)

    def combos(self, idx):
        """All digit assignments of loops ``idx`` in schedule order (innermost fastest)."""
        outer_first = sorted(idx, reverse=True)
        for ds in itertools.product(*(range(self.loops[i][1]) for i in outer_first)):
            yield dict(zip(outer_first, ds))

    def element(self, tensor, v):
        """Coordinates of the element a MAC uses, None for padding."""
        e = self.proj[tensor](v)
        if tensor in self.window_axes:
            a, b = self.window_axes[tensor]
            if not (0 <= e[a] < self.hin and 0 <= e[b] < self.win):
                return None
        return e

    def tile(self, tensor, level, outer):
        """The tile of one instance of ``level`` for fixed digits of every loop above it."""
        inner = [i for i, lp in enumerate(self.loops) if lp[2] <= level]
        lo = hi = None
        for ds in self.combos(inner):
            v = self.point({**outer, **ds})
            if not self.real(v):
                continue
            e = self.proj[tensor](v)  # raw coordinates: padding rows count for the span
            if lo is None:
                lo, hi = list(e), list(e)
            else:
                lo = [min(a, b) for a, b in zip(lo, e)]
                hi = [max(a, b) for a, b in zip(hi, e)]
        if lo is None:
            return frozenset()
        if tensor in self.window_axes:
            a, b = self.window_axes[tensor]
            lo[a], hi[a] = max(lo[a], 0), min(hi[a], self.hin - 1)
            lo[b], hi[b] = max(lo[b], 0), min(hi[b], self.win - 1)
        return frozenset(itertools.product(*(range(x, y + 1) for x, y in zip(lo, hi))))

    # --- counting -----------------------------------------------------------------------
    def innermost(self, tensor, h):
        temporal = [i for i, lp in enumerate(self.loops) if not lp[3]]
        above = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] > h]
        lanes = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] <= h]
        accesses, seen = 0, defaultdict(set)
        for step in self.combos(temporal):
            for inst in self.combos(above):
                used = set()
                for lane in self.combos(lanes):
                    v = self.point({**step, **inst, **lane})
                    if self.real(v):
                        e = self.element(tensor, v)
                        if e is not None:
                            used.add(e)
                accesses += len(used)
                key = tuple(sorted(inst.items()))
                seen[key] |= used
        firsts = sum(len(s) for s in seen.values())
        return accesses, firsts

    def pair(self, tensor, c, p):
        """Child holder ``c`` and its parent ``p``: (fills of c, reads of p, updates of p,
        complete write-backs into p)."""
        steps = [i for i, lp in enumerate(self.loops) if not lp[3] and lp[2] > c]
        insts = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] > c]
        inner = [i for i, lp in enumerate(self.loops) if lp[2] <= c]
        prev = {}
        prev_union = defaultdict(frozenset)
        ever = defaultdict(set)
        fills = reads = updates = complete = 0
        if tensor == "O":
            total_macs = defaultdict(int)
            contributors = defaultdict(set)  # element -> parent instances that ever add into it
            for ds in self.combos(list(range(len(self.loops)))):
                v = self.point(ds)
                if self.real(v):
                    e = self.proj["O"](v)
                    total_macs[e] += 1
                    contributors[e].add(tuple(sorted((i, x) for i, x in ds.items()
                                                     if self.loops[i][3] and self.loops[i][2] > p)))
            done = defaultdict(int)  # (parent instance, element) -> MACs added into it so far

        def write_back(group, elements):
            nonlocal updates, complete
            for e in elements:
                updates += 1
                if done[(group, e)] == total_macs[e] and contributors[e] == {group}:
                    complete += 1

        for step in self.combos(steps):
            fetched = defaultdict(set)
            union = defaultdict(set)
            macs_now = []
            for inst in self.combos(insts):
                key = tuple(sorted(inst.items()))
                group = tuple(sorted((i, x) for i, x in inst.items() if self.loops[i][2] > p))
                new = self.tile(tensor, c, {**step, **inst})
                if tensor == "O":
                    union[group] |= new
                    for ds in self.combos(inner):
                        v = self.point({**step, **inst, **ds})
                        if self.real(v):
                            macs_now.append((group, self.proj["O"](v)))
                else:
                    got = new - prev.get(key, frozenset())
                    fills += len(got)
                    fetched[group] |= got
                prev[key] = new
            if tensor == "O":
                for g in sorted(set(union) | set(prev_union)):
                    now = frozenset(union.get(g, ()))
                    before = prev_union[g]
                    write_back(g, before - now)  # they left: written back with what is done so far
                    back = (now - before) & ever[g]
                    reads += len(back)
                    fills += len(back)
                    ever[g] |= now
                    prev_union[g] = now
                for key in macs_now:
                    done[key] += 1
            else:
                reads += sum(len(s) for s in fetched.values())
        if tensor == "O":
            for g in sorted(prev_union):
                write_back(g, prev_union[g])  # the end of the schedule drains everything
        return fills, reads, updates, complete

    def max_tile(self, tensor, level):
        outer = [i for i, lp in enumerate(self.loops) if lp[2] > level]
        return max((len(self.tile(tensor, level, ds)) for ds in self.combos(outer)), default=0)

    def run(self):
        levels = [{t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for _ in range(self.depth)]
        for lv in levels:
            lv["O"]["final_updates"] = 0
        for t in TENSORS:
            hold = [lv for lv in range(self.depth) if t in self.keeps[lv]]
            acc, firsts = self.innermost(t, hold[0])
            if t == "O":
                levels[hold[0]]["O"]["updates"] = acc
                levels[hold[0]]["O"]["reads"] = acc - firsts
            else:
                levels[hold[0]][t]["reads"] = acc
            for c, p in zip(hold, hold[1:]):
                fills, reads, updates, complete = self.pair(t, c, p)
                levels[c][t]["fills"] = fills
                levels[p][t]["reads"] = reads
                if t == "O":
                    levels[p]["O"]["updates"] = updates
                    levels[p]["O"]["final_updates"] = complete
        macs = sum(1 for ds in self.combos(list(range(len(self.loops)))) if self.real(self.point(ds)))
        steps = prod(lp[1] for lp in self.loops if not lp[3])
        mac_units = prod(x * y for x, y in self.fanout)
        out = []
        for lv in range(self.depth):
            out.append({
                "name": self.names[lv],
                "instances": prod(x * y for x, y in self.fanout[lv + 1:]),
                "used_instances": prod(lp[1] for lp in self.loops if lp[3] and lp[2] > lv),
                "keeps": [t for t in TENSORS if t in self.keeps[lv]],
                "tile": {t: self.max_tile(t, lv) if t in self.keeps[lv] else 0 for t in TENSORS},
                **levels[lv],
            })
        return {"macs": macs, "steps": steps, "mac_units": mac_units,
                "used_mac_units": prod(lp[1] for lp in self.loops if lp[3]),
                "utilization": macs / (steps * mac_units), "levels": out}

    def requirement(self):
        """Per level: bytes per tensor one instance reserves, total, fits."""
        out = []
        for lv in range(self.depth):
            need = {}
            for t in TENSORS:
                if t not in self.keeps[lv]:
                    need[t] = 0
                    continue
                bits = self.bits["psum"] if t == "O" and lv < self.depth - 1 else self.bits[t]
                need[t] = self.mb[lv] * ((self.max_tile(t, lv) * bits + 7) // 8)
            cap = self.caps[lv]
            if cap is None:
                fits = True
            elif isinstance(cap, dict):
                fits = all(need[t] <= cap.get(t, 0) for t in TENSORS if t in self.keeps[lv])
            else:
                fits = sum(need.values()) <= cap
            out.append({"name": self.names[lv], "bytes": need, "total": sum(need.values()), "fits": fits})
        return out


def analyze(workload, architecture, mapping) -> dict[str, Any]:
    """Same shape as ``pm_core.analyze``, by stepping the loop nest element by element."""
    return Sim(workload, architecture, mapping).run()


def requirement(workload, architecture, mapping) -> list[dict[str, Any]]:
    return Sim(workload, architecture, mapping).requirement()


FLAGS: dict = {}
