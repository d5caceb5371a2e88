"""Small instances of perf-mapper's GEMM mapping problems (shared by the tests of the search tier).

``WORK``/``ARCH``: the three-level accelerator of ``_trusted/mapper.py`` (RF, GLB, DRAM) that the
capped and pipelined problems build on. ``CLUSTER_*``: the worked example of the M1 problems'
specs (``gemm-energy-mapper`` and ``gemm-edp-mapper`` v2), the same GEMM on a tiny instance of the
four-level ``eyeriss-cluster-like`` accelerator of ``_trusted/mapper_llm.py`` with what each level
holds (``HOLDS``: the ClusterBuffer keeps no weights)."""

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


# the M1 specs' worked example: the real design's levels and energies per byte, smaller capacities
# and fanouts (a cluster of 2 x 1 PEs, 1 x 2 clusters), the GLB double-buffered
CLUSTER_WORK = {"name": "gemm", "shape": "gemm", "dims": {"M": 4, "N": 2, "K": 2},
                "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}}
CLUSTER_ARCH = {"name": "eyeriss-cluster-like", "mac_pj": 0.5, "clock_ghz": 0.2, "levels": [
    {"name": "RF", "capacity_bytes": {"I": 2, "W": 2, "O": 6}, "fanout": [1, 1], "bytes_per_cycle": 4,
     "read_pj_per_byte": 0.25, "write_pj_per_byte": 0.25},
    {"name": "ClusterBuffer", "capacity_bytes": {"I": 4, "O": 6}, "fanout": [2, 1], "bytes_per_cycle": 16,
     "read_pj_per_byte": 1.0, "write_pj_per_byte": 1.2},
    {"name": "GLB", "capacity_bytes": 48, "fanout": [1, 2], "multiple_buffering": 2, "bytes_per_cycle": 32,
     "read_pj_per_byte": 3.0, "write_pj_per_byte": 3.5},
    {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1], "bytes_per_cycle": 8,
     "read_pj_per_byte": 100.0, "write_pj_per_byte": 100.0}]}
HOLDS = [["I", "W", "O"], ["I", "O"], ["I", "W", "O"], ["I", "W", "O"]]
# the least energy (2136.2 pJ, 8 cycles) and the least EDP (2137.2 pJ x 4 cycles = 8548.8) of the
# specs' worked example
CLUSTER_BEST = {"levels": [{"temporal": [["N", 2]]}, {"spatial_x": [["K", 2]], "temporal": []}, {"temporal": []},
                           {"temporal": [["M", 4]]}]}
CLUSTER_FAST = {"levels": [{"temporal": [["N", 2]]}, {"spatial_x": [["K", 2]], "temporal": []},
                           {"spatial_y": [["M", 2]], "temporal": []}, {"temporal": [["M", 2]]}]}
# valid, not the best: 2145.2 pJ over 4 cycles (EDP 8580.8); its GLB tiles take 22 bytes, 44
# double-buffered; the RF's I and W partitions and both ClusterBuffer partitions are full
CLUSTER_GOOD = {"levels": [{"temporal": [["K", 2]]}, {"temporal": [], "spatial_x": [["M", 2]]},
                           {"temporal": [], "spatial_y": [["M", 2]]}, {"temporal": [["N", 2]]}]}


class Report:
    """A validation report that keeps its checks (what ``mapping_checks`` adds to it)."""

    def __init__(self):
        self.checks = []

    def add(self, name, ok, detail=""):
        self.checks.append((name, ok, detail))
