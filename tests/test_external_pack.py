"""A pack written outside this repository, with its own trusted code, works through every door:
``--pack-path``, ``PERFGRADE_PACKS`` and an installed package's ``perfgrade.packs`` entry point.

The pack is built here in a temporary folder from nothing: its reference and generator (in its
own ``_trusted/`` package, importing a sibling module), two problems whose variants are declared
as switches, exact edits, a unified diff and a whole file, Q&A seeds. Nothing of this repository
is touched: ``problems validate`` (through the real sandbox), ``eval``, ``report`` and the reward
API all run on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TRUSTED_INIT = '''
"""The ext-pack's references and generators (host only)."""
from reference_models.registry import merge
from . import tiles

REFERENCES = merge([tiles], "REFERENCES")
GENERATORS = merge([tiles], "GENERATORS")
'''

TILES = '''
"""Tile counting: a reference that imports a sibling module of the pack."""
from ._ceil import ceil_div


def tile_count(shape, tile):
    tiles = 1
    for s, t in zip(shape, tile):
        tiles *= ceil_div(s, t)
    ragged = sum(1 for s, t in zip(shape, tile) if s % t)
    return {"tiles": tiles, "ragged_dims": ragged}


def gen_shape(rng, max_dim=200):
    n = int(rng.integers(1, 4))
    shape = [int(x) for x in rng.integers(1, max_dim + 1, size=n)]
    tile = [int(rng.integers(1, s + 1)) for s in shape]
    return {"shape": shape, "tile": tile}


REFERENCES = {"tiles.tile_count": tile_count}
GENERATORS = {"tiles.shape": gen_shape}
'''

CEIL = '''
def ceil_div(a, b):
    return -(-a // b)
'''

SOLUTION = '''
FLAGS: dict = {}


def tile_count(shape, tile):
    tiles = 1
    for s, t in zip(shape, tile):
        tiles *= (s // t) if FLAGS.get("floor") else -(-s // t)
    ragged = sum(1 for s, t in zip(shape, tile) if s % t)
    return {"tiles": tiles, "ragged_dims": ragged}
'''

PROBLEM = '''
id = "{pid}"
title = "Tiles of a tiled array"
family = "X1"
difficulty = "easy"
version = 1
summary = "How many tiles cover an array, and how many dimensions end in a ragged tile."
reference = "tiles.tile_count"

[signature]
entry_point = "tile_count"

[[signature.params]]
name = "shape"
type = "list"
description = "the array's size per dimension"

[[signature.params]]
name = "tile"
type = "list"
description = "the tile's size per dimension"

[[outputs]]
name = "tiles"
type = "int"
unit = "tiles"

[[outputs]]
name = "ragged_dims"
type = "int"
unit = "dimensions"

[[domain]]
rule = "len(shape) == len(tile) and all(1 <= t <= s for s, t in [[shape[i], tile[i]] for i in range(len(shape))])"
says = "one tile size per dimension, between 1 and the dimension's size"

[generator]
name = "tiles.shape"
hidden_seed = {seed}
hidden_count = 50
visible_seed = {seed1}

[[variants]]
name = "floor_tiles"
mistake = "counts only the whole tiles (floor division)"
switches = {{ floor = true }}

[[variants]]
name = "split_is_ragged"
mistake = "counts every split dimension as ragged, even when the tile divides it"
[[variants.replace]]
old = "ragged = sum(1 for s, t in zip(shape, tile) if s % t)"
new = "ragged = sum(1 for s, t in zip(shape, tile) if t != s)"

[[variants]]
name = "off_by_one"
mistake = "adds one tile per dimension"
patch = """
@@ -6,2 +6,2 @@
     for s, t in zip(shape, tile):
-        tiles *= (s // t) if FLAGS.get("floor") else -(-s // t)
+        tiles *= (s // t + 1) if FLAGS.get("floor") else -(-s // t) + 1
"""

[[variants]]
file = "variants/examples_only.py"
mistake = "answers one constant, whatever the input"

[qa]
seed = {seed2}
'''

SPEC = """An array of size `shape` (one integer per dimension) is covered by tiles of size `tile`.
A dimension whose size is not a multiple of its tile size ends in a smaller, ragged tile.
Return `tiles`, the number of tiles (whole and ragged) that cover the array, and `ragged_dims`,
the number of dimensions that end in a ragged tile.
"""


def make_pack(where: Path, name: str = "ext-pack") -> Path:
    pack = where / name
    (pack / "_trusted").mkdir(parents=True)
    (pack / "pack.toml").write_text(f'name = "{name}"\nversion = "1.0.0"\ntrusted = "_trusted"\n'
                                    'description = "A pack that lives outside the grader."\n')
    (pack / "_trusted" / "__init__.py").write_text(textwrap.dedent(TRUSTED_INIT))
    (pack / "_trusted" / "tiles.py").write_text(textwrap.dedent(TILES))
    (pack / "_trusted" / "_ceil.py").write_text(textwrap.dedent(CEIL))
    for i, pid in enumerate(("tile-count", "tile-count-again")):
        d = pack / pid
        (d / "variants").mkdir(parents=True)
        (d / "problem.toml").write_text(PROBLEM.format(pid=pid, seed=100 + 10 * i, seed1=101 + 10 * i,
                                                       seed2=102 + 10 * i))
        (d / "spec.md").write_text(SPEC)
        (d / "solution.py").write_text(textwrap.dedent(SOLUTION).lstrip())
        (d / "variants" / "examples_only.py").write_text("def tile_count(shape, tile):\n"
                                                        "    return {'tiles': 1, 'ragged_dims': 0}\n")
    return pack


def grader(*args: str, cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=timeout)


def test_the_pack_loads_with_its_own_trusted_code_and_declared_variants(tmp_path):
    from grader.packs.problems import Catalog

    pack_dir = make_pack(tmp_path)
    cat = Catalog([pack_dir])
    p = cat.find("ext-pack/tile-count")
    assert p.reference_fn([10, 7], [4, 7]) == {"tiles": 3, "ragged_dims": 1}
    assert p.trusted.package.startswith("perfgrade_trusted_ext_pack_")
    sources = {v.name: v.source for v in p.variants}
    assert "FLAGS: dict = {'floor': True}" in sources["floor_tiles"]
    assert "if t != s)" in sources["split_is_ragged"]
    assert "-(-s // t) + 1" in sources["off_by_one"]
    assert sources["examples_only"].startswith("def tile_count")
    # the pack's trusted code never reaches a candidate: the solution and variants are plain modules
    assert all("_trusted" not in s and "reference_models" not in s for s in sources.values())
    # the same pack under another name in another folder is another package: no clash
    other = Catalog([make_pack(tmp_path / "copy", "ext-pack-copy")]).find("ext-pack-copy/tile-count")
    assert other.trusted.package != p.trusted.package
    # same files, same trusted code: the same content hash (and vector cache), whatever the folder
    assert other.content_hash == p.content_hash


def test_a_variant_that_no_longer_applies_is_named(tmp_path):
    from grader.grading.validate import validate
    from grader.packs.problems import Catalog

    pack_dir = make_pack(tmp_path)
    sol = pack_dir / "tile-count" / "solution.py"
    sol.write_text(sol.read_text().replace("if s % t)", "if s % t != 0)"))
    p = Catalog([pack_dir]).find("ext-pack/tile-count")
    (report,) = validate([p], None)
    check = {c.name: c for c in report.checks}["variants apply"]
    assert not check.ok and "split_is_ragged" in check.detail and "occurs 0 times" in check.detail
    assert "off_by_one" not in check.detail and "floor_tiles" not in check.detail


@pytest.mark.docker
def test_validate_eval_report_and_reward_through_pack_path(tmp_path, sandbox_image):
    pack_dir = make_pack(tmp_path / "elsewhere")
    work = tmp_path / "work"
    work.mkdir()
    out = grader("problems", "validate", "ext-pack", "--pack-path", str(pack_dir), "--json", cwd=work)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert report["ok"] and report["kill_rate"] == 1.0
    assert {c["name"] for c in report["problems"][0]["checks"]} >= {"gold (reference)", "gold (solution)", "variants apply"}

    out = grader("eval", "--pack", "ext-pack", "--samples", "3", "--mode", "both", "--qa-items", "2",
                 "--name", "ext", cwd=work, env={"PERFGRADE_PACKS": str(pack_dir)})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    out = grader("report", "runs/ext", "--json", "-", cwd=work)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert "ext-pack" in json.dumps(summary["run"]["pack"])
    assert {p["problem"] for p in summary["problems"]} >= {"ext-pack/tile-count", "ext-pack/tile-count-again"}

    from grader.reward import Rewarder

    right = "```python\n" + (pack_dir / "tile-count" / "solution.py").read_text() + "```"
    wrong = "```python\ndef tile_count(shape, tile):\n    return {'tiles': 1, 'ragged_dims': 0}\n```"
    with Rewarder(pack_paths=[pack_dir]) as r:
        got = r.score("ext-pack/tile-count", [right, wrong])
    assert list(got.rewards) == [1.0, 0.0]


@pytest.mark.docker
def test_an_installed_package_is_found_through_its_entry_point(tmp_path, sandbox_image):
    src = tmp_path / "src"
    module = src / "ext_pack_pkg"
    module.mkdir(parents=True)
    pack = make_pack(tmp_path / "build", "ext-pack-pkg")
    for item in pack.iterdir():
        item.rename(module / item.name)
    (module / "__init__.py").write_text('"""A perfgrade pack, installed as a package."""\n')
    (src / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "ext-pack-pkg"
        version = "1.0.0"

        [project.entry-points."perfgrade.packs"]
        ext-pack-pkg = "ext_pack_pkg"

        [tool.setuptools]
        packages = ["ext_pack_pkg"]

        [tool.setuptools.package-data]
        ext_pack_pkg = ["*.toml", "_trusted/*.py", "*/*.toml", "*/*.md", "*/*.py", "*/variants/*.py"]
    '''))
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--disable-pip-version-check", "--target", str(target), str(src)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    installed = target / "ext_pack_pkg"
    assert (installed / "_trusted" / "tiles.py").is_file() and (installed / "tile-count" / "problem.toml").is_file()
    work = tmp_path / "work"
    work.mkdir()
    env = {"PYTHONPATH": f"{target}{os.pathsep}{ROOT}"}
    out = grader("problems", "list", "--json", cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    assert {"ext-pack-pkg/tile-count", "ext-pack-pkg/tile-count-again"} <= {r["id"] for r in json.loads(out.stdout)}
    out = grader("eval", "--pack", "ext-pack-pkg", "--samples", "2", "--name", "pkg", cwd=work, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # without the package on the path the pack is unknown, and the error names the known packs
    out = grader("eval", "--pack", "ext-pack-pkg", "--samples", "1", cwd=work)
    assert out.returncode != 0 and "ext-pack-pkg" in out.stderr and "perf-core" in out.stderr
