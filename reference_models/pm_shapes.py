"""Real layer and accelerator shapes for the perf-model tier, as data in the format of
problems/perf-model/FORMAT.md.

Layers (``LAYERS``: name -> workload dict; :func:`layer` returns a copy with chosen precisions):

* ResNet-50 (torchvision, 224 x 224 input; the stride-2 3x3 of each first bottleneck, v1.5):
  conv1, the three bottleneck convs of every stage, the stride-2 projection shortcuts;
* DeepLabV3's dilated ResNet-50 stages (output stride 8: dilation 2 in stage 3, 4 in stage 4);
* MobileNetV2 (224 x 224, width 1.0): depthwise 3x3 layers (stride 1 and 2) and pointwise 1x1
  expansions / projections;
* BERT-base (hidden 768, FFN 3072, 12 heads of 64): the Q/K/V/output projections and the FFN
  GEMMs at sequence length 128 and 512, and the attention score / context batched products;
* Llama-2-7B (hidden 4096, FFN 11008, 32 heads of 128) and Llama-3-8B (hidden 4096, FFN 14336,
  32 query heads sharing 8 key/value heads, head 128): projection GEMMs at prefill (512 or 2048
  tokens) and decode (1 token, or a batch of 8 / 16 sequences); attention with a KV cache
  (decode: one query token against 1024 - 8192 cached tokens; prefill: 512 or 2048 tokens).

GEMM convention: ``M`` = tokens (rows of the activations), ``K`` = input features, ``N`` =
output features; ``I`` = activations, ``W`` = the weight matrix. Attention (``bmm``): ``G`` =
key/value heads, ``H`` = query heads per key/value head, ``M`` = query tokens; for the score
product ``K`` = head dim and ``N`` = cached tokens (``W`` = the K cache); for the context product
``K`` = cached tokens and ``N`` = head dim (``W`` = the V cache).

Architectures (``ARCHITECTURES``: name -> architecture dict). Sizes follow the example designs
Timeloop and Accelergy ship (timeloop-accelergy-exercises: eyeriss_like, simba_like) and the
published TPU v1 and NVDLA (nv_full) descriptions; energies (pJ per byte) and bandwidths
(bytes per cycle) are round illustrative values of the right order for each technology, not
measurements:

* ``eyeriss-like``: DRAM; a 128 KiB global buffer feeding 14 x 12 PEs; per PE an RF with
  separate partitions: 12 input bytes, 192 weight bytes, 32 partial-sum bytes; one MAC per PE.
* ``simba-like``: DRAM; a 64 KiB global buffer feeding 16 PEs (X); per PE a 64 KiB input buffer
  feeding 4 weight / accumulation buffer pairs (Y; 32 KiB of weights, 384 B of 24-bit
  accumulators each), each feeding 4 MACs (Y) with a one-weight register each: 256 MACs.
* ``tpu-like``: DRAM; a unified buffer (24 MiB of inputs) with 4 MiB of accumulators feeding a
  128 x 128 array of MACs, each with a double-buffered weight register: 16384 MACs.
* ``nvdla-like``: DRAM; a 512 KiB convolution buffer (inputs and weights) feeding 16 output
  lanes (Y), each with a 2 KiB accumulator feeding 64 MACs (X, one per input channel) that each
  hold one weight: 1024 MACs.
"""

from __future__ import annotations

import copy
from typing import Any

INT8 = {"I": 8, "W": 8, "O": 8, "psum": 24}


def _conv(name: str, c: int, k: int, hw: int, rs: int, stride: int = 1, pad: int | None = None,
          dilation: int = 1) -> dict[str, Any]:
    pad = (dilation * (rs - 1)) // 2 if pad is None else pad
    p = (hw + 2 * pad - dilation * (rs - 1) - 1) // stride + 1
    return {"name": name, "shape": "conv",
            "dims": {"N": 1, "K": k, "C": c, "P": p, "Q": p, "R": rs, "S": rs},
            "input_hw": [hw, hw], "stride": [stride, stride], "dilation": [dilation, dilation],
            "padding": [pad, pad], "bits": dict(INT8)}


def _dw(name: str, c: int, hw: int, stride: int) -> dict[str, Any]:
    p = (hw + 2 - 2 - 1) // stride + 1
    return {"name": name, "shape": "depthwise", "dims": {"N": 1, "C": c, "P": p, "Q": p, "R": 3, "S": 3},
            "input_hw": [hw, hw], "stride": [stride, stride], "dilation": [1, 1], "padding": [1, 1],
            "bits": dict(INT8)}


def _gemm(name: str, m: int, k: int, n: int) -> dict[str, Any]:
    return {"name": name, "shape": "gemm", "dims": {"M": m, "N": n, "K": k}, "bits": dict(INT8)}


def _bmm(name: str, b: int, g: int, h: int, m: int, n: int, k: int) -> dict[str, Any]:
    return {"name": name, "shape": "bmm", "dims": {"B": b, "G": g, "H": h, "M": m, "N": n, "K": k},
            "bits": dict(INT8)}


_RESNET = [
    _conv("resnet50.conv1", 3, 64, 224, 7, stride=2, pad=3),
    _conv("resnet50.layer1.0.conv1", 64, 64, 56, 1),
    _conv("resnet50.layer1.0.conv2", 64, 64, 56, 3),
    _conv("resnet50.layer1.0.conv3", 64, 256, 56, 1),
    _conv("resnet50.layer1.1.conv1", 256, 64, 56, 1),
    _conv("resnet50.layer2.0.conv1", 256, 128, 56, 1),
    _conv("resnet50.layer2.0.conv2", 128, 128, 56, 3, stride=2),
    _conv("resnet50.layer2.0.downsample", 256, 512, 56, 1, stride=2, pad=0),
    _conv("resnet50.layer2.1.conv2", 128, 128, 28, 3),
    _conv("resnet50.layer2.1.conv3", 128, 512, 28, 1),
    _conv("resnet50.layer3.0.conv2", 256, 256, 28, 3, stride=2),
    _conv("resnet50.layer3.1.conv1", 1024, 256, 14, 1),
    _conv("resnet50.layer3.1.conv2", 256, 256, 14, 3),
    _conv("resnet50.layer3.1.conv3", 256, 1024, 14, 1),
    _conv("resnet50.layer4.0.conv2", 512, 512, 14, 3, stride=2),
    _conv("resnet50.layer4.1.conv1", 2048, 512, 7, 1),
    _conv("resnet50.layer4.1.conv2", 512, 512, 7, 3),
    _conv("resnet50.layer4.1.conv3", 512, 2048, 7, 1),
]

_DEEPLAB = [
    _conv("deeplabv3.layer3.1.conv2", 256, 256, 28, 3, dilation=2),
    _conv("deeplabv3.layer4.1.conv2", 512, 512, 28, 3, dilation=4),
    _conv("deeplabv3.aspp.conv_rate12", 2048, 256, 28, 3, dilation=12),
]

_MOBILENET_DW = [
    _dw("mobilenetv2.features.1.dw", 32, 112, 1),
    _dw("mobilenetv2.features.2.dw", 96, 112, 2),
    _dw("mobilenetv2.features.3.dw", 144, 56, 1),
    _dw("mobilenetv2.features.4.dw", 144, 56, 2),
    _dw("mobilenetv2.features.5.dw", 192, 28, 1),
    _dw("mobilenetv2.features.7.dw", 192, 28, 2),
    _dw("mobilenetv2.features.8.dw", 384, 14, 1),
    _dw("mobilenetv2.features.12.dw", 576, 14, 1),
    _dw("mobilenetv2.features.14.dw", 576, 14, 2),
    _dw("mobilenetv2.features.15.dw", 960, 7, 1),
]

_MOBILENET_PW = [
    _conv("mobilenetv2.features.1.pw", 32, 16, 112, 1),
    _conv("mobilenetv2.features.2.expand", 16, 96, 112, 1),
    _conv("mobilenetv2.features.2.project", 96, 24, 56, 1),
    _conv("mobilenetv2.features.3.expand", 24, 144, 56, 1),
    _conv("mobilenetv2.features.4.project", 144, 32, 28, 1),
    _conv("mobilenetv2.features.7.project", 192, 64, 14, 1),
    _conv("mobilenetv2.features.11.project", 384, 96, 14, 1),
    _conv("mobilenetv2.features.14.project", 576, 160, 7, 1),
    _conv("mobilenetv2.features.17.project", 960, 320, 7, 1),
    _conv("mobilenetv2.conv_last", 320, 1280, 7, 1),
]

_BERT = []
for _seq in (128, 512):
    _BERT += [
        _gemm(f"bert-base.seq{_seq}.attention.query", _seq, 768, 768),
        _gemm(f"bert-base.seq{_seq}.attention.qkv_fused", _seq, 768, 2304),
        _gemm(f"bert-base.seq{_seq}.attention.output", _seq, 768, 768),
        _gemm(f"bert-base.seq{_seq}.intermediate", _seq, 768, 3072),
        _gemm(f"bert-base.seq{_seq}.output", _seq, 3072, 768),
    ]

_LLAMA = []
for _tok, _tag in ((512, "prefill512"), (2048, "prefill2048"), (1, "decode"), (8, "decode.batch8"), (16, "decode.batch16")):
    _LLAMA += [
        _gemm(f"llama2-7b.{_tag}.q_proj", _tok, 4096, 4096),
        _gemm(f"llama2-7b.{_tag}.gate_proj", _tok, 4096, 11008),
        _gemm(f"llama2-7b.{_tag}.down_proj", _tok, 11008, 4096),
        _gemm(f"llama3-8b.{_tag}.q_proj", _tok, 4096, 4096),
        _gemm(f"llama3-8b.{_tag}.k_proj", _tok, 4096, 1024),
        _gemm(f"llama3-8b.{_tag}.o_proj", _tok, 4096, 4096),
        _gemm(f"llama3-8b.{_tag}.up_proj", _tok, 4096, 14336),
        _gemm(f"llama3-8b.{_tag}.down_proj", _tok, 14336, 4096),
    ]

_ATTENTION = []
for _ctx in (1024, 4096, 8192):
    _ATTENTION += [
        _bmm(f"llama3-8b.decode.ctx{_ctx}.scores", 1, 8, 4, 1, _ctx, 128),
        _bmm(f"llama3-8b.decode.ctx{_ctx}.context", 1, 8, 4, 1, 128, _ctx),
        _bmm(f"llama2-7b.decode.ctx{_ctx}.scores", 1, 32, 1, 1, _ctx, 128),
        _bmm(f"llama3-8b.decode.batch8.ctx{_ctx}.scores", 8, 8, 4, 1, _ctx, 128),
    ]
for _seq in (512, 2048):
    _ATTENTION += [
        _bmm(f"llama3-8b.prefill{_seq}.scores", 1, 8, 4, _seq, _seq, 128),
        _bmm(f"llama3-8b.prefill{_seq}.context", 1, 8, 4, _seq, 128, _seq),
    ]
for _seq in (128, 512):
    _ATTENTION += [
        _bmm(f"bert-base.seq{_seq}.scores", 1, 12, 1, _seq, _seq, 64),
        _bmm(f"bert-base.seq{_seq}.context", 1, 12, 1, _seq, 64, _seq),
    ]

LAYERS: dict[str, dict[str, Any]] = {w["name"]: w for w in
                                     _RESNET + _DEEPLAB + _MOBILENET_DW + _MOBILENET_PW + _BERT + _LLAMA + _ATTENTION}

GROUPS: dict[str, tuple[str, ...]] = {
    "resnet50": tuple(w["name"] for w in _RESNET),
    "resnet50-3x3": tuple(w["name"] for w in _RESNET if w["dims"]["R"] == 3),
    "resnet50-strided": tuple(w["name"] for w in _RESNET if w["stride"][0] > 1),
    "deeplabv3-dilated": tuple(w["name"] for w in _DEEPLAB),
    "mobilenetv2-dw": tuple(w["name"] for w in _MOBILENET_DW),
    "mobilenetv2-pw": tuple(w["name"] for w in _MOBILENET_PW),
    "bert-base": tuple(w["name"] for w in _BERT),
    "llama-prefill": tuple(w["name"] for w in _LLAMA if "prefill" in w["name"]),
    "llama-decode": tuple(w["name"] for w in _LLAMA if "decode" in w["name"]),
    "attention-decode": tuple(w["name"] for w in _ATTENTION if ".decode." in w["name"]),
    "attention-prefill": tuple(w["name"] for w in _ATTENTION if ".decode." not in w["name"]),
}
GROUPS["conv"] = GROUPS["resnet50"] + GROUPS["deeplabv3-dilated"] + GROUPS["mobilenetv2-pw"]
GROUPS["gemm"] = GROUPS["bert-base"] + GROUPS["llama-prefill"] + GROUPS["llama-decode"]
GROUPS["attention"] = GROUPS["attention-decode"] + GROUPS["attention-prefill"]


def layer(name: str, bits: dict[str, int] | None = None) -> dict[str, Any]:
    """A copy of a named real layer, optionally with other precisions."""
    w = copy.deepcopy(LAYERS[name])
    if bits:
        w["bits"] = dict(bits)
    return w


def group(name: str) -> tuple[str, ...]:
    """The layer names of a named group (``resnet50``, ``mobilenetv2-dw``, ``llama-decode``, ...)."""
    return GROUPS[name]


ARCHITECTURES: dict[str, dict[str, Any]] = {
    "eyeriss-like": {
        "name": "eyeriss-like", "mac_pj": 0.5, "clock_ghz": 0.2,
        "levels": [
            {"name": "RF", "capacity_bytes": {"I": 12, "W": 192, "O": 32}, "fanout": [1, 1],
             "bytes_per_cycle": 4, "read_pj_per_byte": 0.25, "write_pj_per_byte": 0.25},
            {"name": "GLB", "capacity_bytes": 131072, "fanout": [14, 12],
             "bytes_per_cycle": 32, "read_pj_per_byte": 3.0, "write_pj_per_byte": 3.5},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
             "bytes_per_cycle": 8, "read_pj_per_byte": 100.0, "write_pj_per_byte": 100.0},
        ],
    },
    "simba-like": {
        "name": "simba-like", "mac_pj": 0.3, "clock_ghz": 1.0,
        "levels": [
            {"name": "WeightReg", "capacity_bytes": {"W": 1}, "fanout": [1, 1],
             "bytes_per_cycle": 1, "read_pj_per_byte": 0.05, "write_pj_per_byte": 0.05},
            {"name": "PEBuffer", "capacity_bytes": {"W": 32768, "O": 384}, "fanout": [1, 4],
             "bytes_per_cycle": 16, "read_pj_per_byte": 0.8, "write_pj_per_byte": 0.9},
            {"name": "PEInputBuffer", "capacity_bytes": {"I": 65536}, "fanout": [1, 4],
             "bytes_per_cycle": 16, "read_pj_per_byte": 1.2, "write_pj_per_byte": 1.3},
            {"name": "GlobalBuffer", "capacity_bytes": 65536, "fanout": [16, 1],
             "bytes_per_cycle": 64, "read_pj_per_byte": 2.0, "write_pj_per_byte": 2.2},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
             "bytes_per_cycle": 32, "read_pj_per_byte": 64.0, "write_pj_per_byte": 64.0},
        ],
    },
    "tpu-like": {
        "name": "tpu-like", "mac_pj": 0.2, "clock_ghz": 0.7,
        "levels": [
            {"name": "WeightReg", "capacity_bytes": {"W": 2}, "fanout": [1, 1], "multiple_buffering": 2,
             "bytes_per_cycle": 1, "read_pj_per_byte": 0.03, "write_pj_per_byte": 0.03},
            {"name": "UnifiedBuffer", "capacity_bytes": {"I": 25165824, "O": 4194304}, "fanout": [128, 128],
             "bytes_per_cycle": 512, "read_pj_per_byte": 1.5, "write_pj_per_byte": 1.8},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
             "bytes_per_cycle": 48, "read_pj_per_byte": 40.0, "write_pj_per_byte": 40.0},
        ],
    },
    "nvdla-like": {
        "name": "nvdla-like", "mac_pj": 0.25, "clock_ghz": 1.0,
        "levels": [
            {"name": "WeightReg", "capacity_bytes": {"W": 1}, "fanout": [1, 1],
             "bytes_per_cycle": 1, "read_pj_per_byte": 0.04, "write_pj_per_byte": 0.04},
            {"name": "Accumulator", "capacity_bytes": {"O": 2048}, "fanout": [64, 1],
             "bytes_per_cycle": 8, "read_pj_per_byte": 0.6, "write_pj_per_byte": 0.7},
            {"name": "ConvBuffer", "capacity_bytes": 524288, "fanout": [1, 16],
             "bytes_per_cycle": 128, "read_pj_per_byte": 2.5, "write_pj_per_byte": 2.8},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
             "bytes_per_cycle": 32, "read_pj_per_byte": 60.0, "write_pj_per_byte": 60.0},
        ],
    },
}


def architecture(name: str) -> dict[str, Any]:
    """A copy of a named real architecture."""
    return copy.deepcopy(ARCHITECTURES[name])


__all__ = ["ARCHITECTURES", "GROUPS", "LAYERS", "architecture", "group", "layer"]
