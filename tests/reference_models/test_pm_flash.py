"""pm_flash (f15-tiled-causal-attention) against an independent brute-force simulator written
from the spec's text, plus hand-worked cases for the conventions the spec pins.

The simulator below never imports the reference: it lists the passes of the schedule, and for
every pass walks its key blocks in the stated order, keeping the buffer's K/V content as a set of
(head, key) elements and checking every (query, key) pair of every head one by one.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
_m_pm_flash = _TRUSTED.submodule("pm_flash")
flash_inputs = _m_pm_flash.flash_inputs
tiled_causal_attention = _m_pm_flash.tiled_causal_attention

OUT_KEYS = {"q_read_bytes", "k_read_bytes", "v_read_bytes", "o_write_bytes", "score_blocks", "macs",
            "masked_scores", "exponentials", "sram_bytes", "fits"}


def brute(workload, architecture, mapping):
    dims = workload["dims"]
    G, H, M, D = dims["G"], dims["H"], dims["M"], dims["D"]
    cached, bits = workload["cached"], workload["bits"]
    buf = architecture["levels"][0]
    Br, Bc, hp, order = mapping["Br"], mapping["Bc"], mapping["heads_per_pass"], mapping["kv_order"]
    positions = [cached + i for i in range(M)]          # position of each query row
    keys = list(range(cached + M))                      # one key per position
    qblocks = [positions[s:s + Br] for s in range(0, M, Br)]
    kblocks = [keys[s:s + Bc] for s in range(0, len(keys), Bc)]

    passes = []
    for g in range(G):
        for qpos in qblocks:
            heads = list(range(H))
            while heads:
                passes.append((g, qpos, heads[:hp]))
                heads = heads[hp:]

    held: frozenset = frozenset()
    vals = dict.fromkeys("QKVO", 0)
    n_blocks = n_macs = n_masked = n_exp = 0
    peak = {"Q": 0, "KV": 0, "S": 0, "acc": 0, "stat": 0}
    for number, (g, qpos, heads) in enumerate(passes):
        vals["Q"] += len(qpos) * D * len(heads)
        visited = [kb for kb, ks in enumerate(kblocks) if any(k <= q for q in qpos for k in ks)]
        if order == "alternating" and number % 2:
            visited = visited[::-1]
        started = {(h, q): False for h in heads for q in qpos}
        for kb in visited:
            content = frozenset((g, k) for k in kblocks[kb])
            if content != held:
                vals["K"] += len(content) * D
                vals["V"] += len(content) * D
                held = content
            peak["KV"] = max(peak["KV"], len(content) * D)
            peak["S"] = max(peak["S"], len(heads) * len(qpos) * len(kblocks[kb]))
            for h in heads:
                n_blocks += 1
                for q in qpos:
                    for k in kblocks[kb]:
                        n_macs += 2 * D
                        n_exp += 1
                        n_masked += k > q
                    if started[(h, q)]:
                        n_exp += 1
                    started[(h, q)] = True
        peak["Q"] = max(peak["Q"], len(qpos) * D * len(heads))
        peak["acc"] = max(peak["acc"], len(qpos) * D * len(heads))
        peak["stat"] = max(peak["stat"], 2 * len(qpos) * len(heads))
        vals["O"] += len(qpos) * D * len(heads)

    def nb(n, b):
        return (n * b + 7) // 8

    mb = buf["multiple_buffering"]
    room = (nb(peak["Q"], bits["Q"]) + mb * nb(peak["KV"], bits["K"]) + mb * nb(peak["KV"], bits["V"])
            + nb(peak["S"], bits["S"]) + nb(peak["acc"], bits["acc"]) + nb(peak["stat"], bits["stat"]))
    return {"q_read_bytes": nb(vals["Q"], bits["Q"]), "k_read_bytes": nb(vals["K"], bits["K"]),
            "v_read_bytes": nb(vals["V"], bits["V"]), "o_write_bytes": nb(vals["O"], bits["O"]),
            "score_blocks": n_blocks, "macs": n_macs, "masked_scores": n_masked, "exponentials": n_exp,
            "sram_bytes": room, "fits": room <= buf["capacity_bytes"]}


def case(G=1, H=1, M=3, D=2, cached=0, Br=2, Bc=2, hp=1, order="ascending", mb=1, cap=10**9, bits=None):
    bits = bits or {"Q": 8, "K": 8, "V": 8, "O": 8, "S": 8, "acc": 8, "stat": 8}
    return ({"name": "t", "shape": "attention", "dims": {"G": G, "H": H, "M": M, "D": D}, "cached": cached,
             "bits": bits},
            {"name": "t", "levels": [{"name": "Buffer", "capacity_bytes": cap, "multiple_buffering": mb},
                                     {"name": "DRAM", "capacity_bytes": None}]},
            {"Br": Br, "Bc": Bc, "heads_per_pass": hp, "kv_order": order})


@pytest.mark.parametrize("seed", range(300))
def test_reference_matches_the_brute_force_simulator(seed):
    args = flash_inputs(np.random.default_rng([777, seed]))
    assert tiled_causal_attention(**copy.deepcopy(args)) == brute(**args)


@pytest.mark.parametrize("seed", range(60))
def test_random_schedules_beyond_the_generator(seed):
    rng = np.random.default_rng([778, seed])
    H = int(rng.integers(1, 6))
    args = case(G=int(rng.integers(1, 3)), H=H, M=int(rng.integers(1, 30)), D=int(rng.integers(1, 4)),
                cached=int(rng.integers(0, 50)), Br=int(rng.integers(1, 35)), Bc=int(rng.integers(1, 35)),
                hp=int(rng.integers(1, H + 1)), order=str(rng.choice(["ascending", "alternating"])),
                mb=int(rng.integers(1, 4)),
                bits={k: int(rng.choice([1, 3, 4, 8, 16])) for k in ("Q", "K", "V", "O", "S", "acc", "stat")})
    assert tiled_causal_attention(*args) == brute(*args)


def test_hand_worked_alternating_case():
    # T = 5 keys in blocks {0,1} {2,3} {4}; query rows at positions 2, 3 (block 0) and 4 (block 1).
    # Query block 0 skips key block 2 (key 4 is after both rows). Passes: 0 up (read kb0, kb1),
    # 1 down (kb1 held, read kb0), 2 up (kb0 held, read kb1, kb2), 3 down (kb2 held, read kb1, kb0).
    args = case(G=1, H=2, M=3, D=2, cached=2, Br=2, Bc=2, hp=1, order="alternating")
    r = tiled_causal_attention(*args)
    assert r["k_read_bytes"] == r["v_read_bytes"] == 13 * 2
    assert r["score_blocks"] == 10
    assert r["macs"] == 26 * 2 * 2
    assert r["masked_scores"] == 2  # row at position 2 against key 3, for both heads
    assert r["exponentials"] == 26 + 8
    assert r["q_read_bytes"] == r["o_write_bytes"] == 2 * 3 * 2
    assert r == brute(*args)


def test_ascending_rereads_block_zero_at_every_pass():
    args = case(G=1, H=2, M=3, D=2, cached=2, Br=2, Bc=2, hp=1, order="ascending")
    assert tiled_causal_attention(*args)["k_read_bytes"] == 18 * 2


def test_ascending_reuses_when_a_pass_visits_only_block_zero():
    # no cache, two one-row query blocks, one key block holding both keys: read once in all
    args = case(G=1, H=1, M=2, D=3, cached=0, Br=1, Bc=4)
    r = tiled_causal_attention(*args)
    assert r["k_read_bytes"] == 2 * 3
    assert r["masked_scores"] == 1 and r["exponentials"] == 4
    # a second kv head never reuses the first head's block
    assert tiled_causal_attention(*case(G=2, H=1, M=2, D=3, cached=0, Br=1, Bc=4))["k_read_bytes"] == 4 * 3


def test_heads_of_a_group_share_one_pass():
    one = tiled_causal_attention(*case(G=2, H=4, M=5, D=2, cached=7, Br=2, Bc=3, hp=4))
    per = tiled_causal_attention(*case(G=2, H=4, M=5, D=2, cached=7, Br=2, Bc=3, hp=1))
    ragged = tiled_causal_attention(*case(G=2, H=4, M=5, D=2, cached=7, Br=2, Bc=3, hp=3))  # passes of 3 and 1
    assert per["k_read_bytes"] == 4 * one["k_read_bytes"]
    assert ragged["k_read_bytes"] == 2 * one["k_read_bytes"]
    assert one["macs"] == per["macs"] == ragged["macs"]


def test_decode_sees_every_key_and_masks_nothing():
    r = tiled_causal_attention(*case(G=1, H=1, M=1, D=4, cached=9, Br=4, Bc=4))
    assert r["score_blocks"] == 3 and r["masked_scores"] == 0
    assert r["macs"] == 10 * 2 * 4 and r["exponentials"] == 10 + 2


def test_cache_offset_moves_the_diagonal():
    # three rows at positions 4, 5, 6 with key blocks of 4: every block pair is visited, and the
    # masked pairs are those right of the diagonal inside the last key block
    r = tiled_causal_attention(*case(M=3, D=1, cached=4, Br=3, Bc=4))
    assert r["score_blocks"] == 2 and r["masked_scores"] == 2 + 1


def test_buffer_room_items_round_on_their_own():
    bits = {"Q": 3, "K": 3, "V": 5, "O": 8, "S": 3, "acc": 7, "stat": 1}
    args = case(G=1, H=3, M=5, D=3, cached=1, Br=2, Bc=5, hp=2, mb=2, cap=0, bits=bits)
    # Q 2 rows x 3 x 2 heads; K, V one block of 5 keys x 3 (two copies); S 2 x 5 x 2; acc like Q; stat 2 x 2 x 2
    want = 5 + 2 * 6 + 2 * 10 + 8 + 11 + 1
    r = tiled_causal_attention(*args)
    assert r["sram_bytes"] == want and r["fits"] is False
    args[1]["levels"][0]["capacity_bytes"] = want
    assert tiled_causal_attention(*args)["fits"] is True


def test_ragged_blocks_count_only_real_rows_and_keys():
    r = tiled_causal_attention(*case(M=5, D=1, cached=0, Br=2, Bc=3))
    # query blocks {0,1} {2,3} {4}; key blocks {0,1,2} {3,4}: visits 1, 2, 2 key blocks
    assert r["score_blocks"] == 5
    assert r["macs"] == 2 * (2 * 3 + 2 * 5 + 1 * 5)


def test_real_vectors_are_large():
    # the reference's speed on them is measured by benchmarks/bench_references.py
    for i in range(10):
        args = flash_inputs(np.random.default_rng([15303, i]), real=True)
        r = tiled_causal_attention(**args)
        assert set(r) == OUT_KEYS
        assert r["macs"] // (2 * args["workload"]["dims"]["D"]) >= 100_000_000
