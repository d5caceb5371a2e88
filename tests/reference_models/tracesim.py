"""A brute-force trace simulator for mapped loop nests (tests only: slow, literal, obviously right).

It takes the same workload / architecture / mapping dicts as ``reference_models.loopnest`` and
executes the loop nest. For every storage level that holds a tensor it keeps, per instance, the
set of tensor coordinates of the current tile (the coordinates touched by the valid MACs of the
sub-nest below the level, for the current values of the loops above it), and counts:

* read-only tensors: fills = elements entering a tile (delta: ``new - old``; refetch: the whole new
  tile whenever the set changes); the parent's reads = the union, over the child instances under
  one parent instance, of what they fetch in that step (multicast counted once); at the innermost
  holder, reads = the distinct operands of the valid MACs under an instance in each time step;
* outputs: the child instances under one parent instance accumulate together (spatial
  reduction): write-backs = elements leaving the union of their tiles, plus the final drain; a
  partial sum is read back whenever an element enters that union again (not the first time); at
  the innermost holder every update is a read-modify-write except the first update of each
  element at an instance.

Nothing is shared with the closed forms: only the input format is the same.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from math import prod
from typing import Any

TENSORS = ("I", "W", "O")


def _parse(workload: dict[str, Any]):
    kind = workload.get("kind", "gemm")
    if kind == "gemm":
        dims = ("M", "N", "K")
        bounds = {d: workload[d] for d in dims}
        proj = {
            "I": lambda v: (v["M"], v["K"]),
            "W": lambda v: (v["K"], v["N"]),
            "O": lambda v: (v["M"], v["N"]),
        }
        return dims, bounds, proj
    dims = ("N", "K", "C", "P", "Q", "R", "S")
    bounds = {d: workload.get(d, 1) for d in dims}
    st, dil = workload.get("stride", 1), workload.get("dilation", 1)
    proj = {
        "I": lambda v: (v["N"], v["C"], v["P"] * st + v["R"] * dil, v["Q"] * st + v["S"] * dil),
        "W": lambda v: (v["K"], v["C"], v["R"], v["S"]),
        "O": lambda v: (v["N"], v["K"], v["P"], v["Q"]),
    }
    return dims, bounds, proj


def _bbox(points: set[tuple[int, ...]]) -> frozenset[tuple[int, ...]]:
    if not points:
        return frozenset()
    lo = [min(p[a] for p in points) for a in range(len(next(iter(points))))]
    hi = [max(p[a] for p in points) for a in range(len(lo))]
    return frozenset(itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi))))


class Trace:
    def __init__(self, workload, architecture, mapping, input_reuse="delta", footprint="bbox"):
        self.dims, self.bounds, self.proj = _parse(workload)
        self.names = [lv.get("name", f"L{i}") for i, lv in enumerate(architecture["levels"])]
        self.keeps = [set(TENSORS) - set(lv.get("bypass", [])) for lv in architecture["levels"]]
        self.reuse, self.footprint = input_reuse, footprint
        # the loop nest, inner to outer: (dim, factor, level, spatial)
        self.loops = []
        for lv, m in enumerate(mapping["levels"]):
            self.loops += [(d, f, lv, True) for d, f in m.get("spatial", [])]
            self.loops += [(d, f, lv, False) for d, f in m.get("temporal", [])]
        running = dict.fromkeys(self.dims, 1)
        self.stride = []
        for d, f, _, _ in self.loops:
            self.stride.append(running[d])
            running[d] *= f
        self.depth = len(self.names)

    # -- the iteration space -------------------------------------------------------------
    def _values(self, digits: dict[int, int]) -> dict[str, int]:
        v = dict.fromkeys(self.dims, 0)
        for i, dg in digits.items():
            v[self.loops[i][0]] += dg * self.stride[i]
        return v

    def _valid(self, v: dict[str, int]) -> bool:
        return all(v[d] < self.bounds[d] for d in self.dims)

    def _combos(self, idx: list[int]):
        """Every assignment of digits to the loops ``idx``, the innermost varying fastest."""
        order = sorted(idx, reverse=True)  # outer first
        for digits in itertools.product(*(range(self.loops[i][1]) for i in order)):
            yield dict(zip(order, digits))

    def _tile(self, tensor: str, level: int, fixed: dict[int, int]) -> frozenset:
        inner = [i for i, lp in enumerate(self.loops) if lp[2] <= level]
        pts = set()
        for digits in self._combos(inner):
            v = self._values({**fixed, **digits})
            if self._valid(v):
                pts.add(self.proj[tensor](v))
        if self.footprint == "bbox":
            return _bbox(pts)
        return frozenset(pts)

    # -- counting ------------------------------------------------------------------------
    def _mac_level(self, tensor: str, holder: int) -> tuple[int, int]:
        """(accesses, first touches) at the innermost holder."""
        temporal = [i for i, lp in enumerate(self.loops) if not lp[3]]
        outer_sp = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] > holder]
        inner_sp = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] <= holder]
        accesses, touched = 0, defaultdict(set)
        firsts = 0
        for step in self._combos(temporal):
            for inst in self._combos(outer_sp):
                used = set()
                for lane in self._combos(inner_sp):
                    v = self._values({**step, **inst, **lane})
                    if self._valid(v):
                        used.add(self.proj[tensor](v))
                accesses += len(used)
                key = tuple(sorted(inst.items()))
                firsts += len(used - touched[key])
                touched[key] |= used
        return accesses, firsts

    def _pair(self, tensor: str, child: int, parent: int) -> dict[str, int]:
        """Simulate the child's tiles over time; the parent serves them.

        The child instances under one parent instance form a group. For a read-only tensor the
        parent reads, per step, the union of what the group's instances fetch (multicast). For
        the outputs the group is one accumulator (spatial reduction): an element is written back
        when it leaves the union of the group's tiles (when the last instance holding it drops
        it, or at the final drain) and read back when it enters that union again.
        """
        outer_t = [i for i, lp in enumerate(self.loops) if not lp[3] and lp[2] > child]
        inst_sp = [i for i, lp in enumerate(self.loops) if lp[3] and lp[2] > child]
        prev: dict[tuple, frozenset] = {}
        prev_group: dict[tuple, set] = defaultdict(set)
        ever: dict[tuple, set] = defaultdict(set)
        fills = reads = updates = 0
        for step in self._combos(outer_t):
            fetched: dict[tuple, set] = defaultdict(set)
            union: dict[tuple, set] = defaultdict(set)
            for inst in self._combos(inst_sp):
                key = tuple(sorted(inst.items()))
                group = tuple(sorted((i, dg) for i, dg in inst.items() if self.loops[i][2] > parent))
                new = self._tile(tensor, child, {**step, **inst})
                old = prev.get(key, frozenset())
                union[group] |= new
                if tensor != "O":
                    if self.reuse == "refetch":
                        got = new if new != old else frozenset()
                    else:
                        got = new - old
                    fills += len(got)
                    fetched[group] |= got
                prev[key] = new
            reads += sum(len(s) for s in fetched.values())
            if tensor == "O":
                for group, now in union.items():
                    before = prev_group[group]
                    updates += len(before - now)
                    back = (now - before) & ever[group]
                    reads += len(back)
                    fills += len(back)
                    ever[group] |= now
                    prev_group[group] = now
        if tensor == "O":  # the final drain
            updates += sum(len(s) for s in prev_group.values())
        return {"fills": fills, "reads": reads, "updates": updates}

    def run(self) -> dict[str, Any]:
        levels = [{t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for _ in range(self.depth)]
        for t in TENSORS:
            holders = [lv for lv in range(self.depth) if t in self.keeps[lv]]
            acc, firsts = self._mac_level(t, holders[0])
            if t == "O":
                levels[holders[0]][t]["updates"] = acc
                levels[holders[0]][t]["reads"] = acc - firsts
            else:
                levels[holders[0]][t]["reads"] = acc
            for c, p in zip(holders, holders[1:]):
                r = self._pair(t, c, p)
                levels[c][t]["fills"] = r["fills"]
                levels[p][t]["reads"] = r["reads"]
                if t == "O":
                    levels[p][t]["updates"] = r["updates"]
        out_levels = []
        for lv in range(self.depth):
            inst = prod(lp[1] for lp in self.loops if lp[3] and lp[2] > lv)
            tiles = {t: len(self._tile(t, lv, {})) if t in self.keeps[lv] else 0 for t in TENSORS}
            out_levels.append({"name": self.names[lv], "instances": inst, "tiles": tiles, **levels[lv]})
        macs = 0
        for digits in self._combos(list(range(len(self.loops)))):
            macs += self._valid(self._values(digits))
        return {
            "macs": macs,
            "steps": prod(lp[1] for lp in self.loops if not lp[3]),
            "mac_units": prod(lp[1] for lp in self.loops if lp[3]),
            "levels": out_levels,
        }


def simulate(workload, architecture, mapping, input_reuse="delta", footprint="bbox") -> dict[str, Any]:
    """Same result shape as ``loopnest.analyze``, by executing the loop nest."""
    return Trace(workload, architecture, mapping, input_reuse, footprint).run()
