"""A small instance of perf-mapper's first problem kind and the spec's worked example mapping
(shared by the tests of the search tier)."""

WORK = {"name": "gemm", "shape": "gemm", "dims": {"M": 4, "N": 2, "K": 2}, "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}}
ARCH = {"name": "three-level", "levels": [
    {"name": "RF", "capacity_bytes": {"I": 2, "W": 2, "O": 6}, "fanout": [1, 1],
     "read_pj_per_byte": 0.25, "write_pj_per_byte": 0.25},
    {"name": "GLB", "capacity_bytes": 64, "fanout": [2, 1], "multiple_buffering": 2,
     "read_pj_per_byte": 3.0, "write_pj_per_byte": 3.5},
    {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1], "read_pj_per_byte": 100.0, "write_pj_per_byte": 100.0}]}
GOOD = {"levels": [{"temporal": [["K", 2]]}, {"temporal": [["M", 2]], "spatial_x": [["M", 2]]},
                   {"temporal": [["N", 2]]}]}
# the worked examples of the M4 and M5 specs on a four-column array: four cycles on every column,
# or eight cycles on two columns for less energy
FAST = {"levels": [{"temporal": [["K", 2]]}, {"spatial_x": [["M", 4]]}, {"temporal": [["N", 2]]}]}
LEAN = {"levels": [{"temporal": [["N", 2]]}, {"spatial_x": [["K", 2]]}, {"temporal": [["M", 4]]}]}


class Report:
    """A validation report that keeps its checks (what ``mapping_checks`` adds to it)."""

    def __init__(self):
        self.checks = []

    def add(self, name, ok, detail=""):
        self.checks.append((name, ok, detail))
