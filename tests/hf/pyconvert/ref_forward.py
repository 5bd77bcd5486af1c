# Reference forward pass of a Hugging Face LlamaForCausalLM / MistralForCausalLM / MixtralForCausalLM /
# Qwen2ForCausalLM / Qwen3ForCausalLM checkpoint, computed in float64 straight from its safetensors and
# config.json (as transformers' modeling code does: RMSNorm, rotate_half RoPE with optional linear
# scaling, grouped-query causal attention with Qwen2's q/k/v biases and Qwen3's per-head q/k norms,
# SwiGLU; Mixtral's softmax router over the experts, top num_experts_per_tok renormalised),
# for scripts/check-convert-logits. Prints one line of logits per position.
#   ref_forward.py CHECKPOINT_DIR ID ID ...
import json
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16}


def load(dir_):
    names = sorted(f for f in os.listdir(dir_) if f.startswith("model") and f.endswith(".safetensors"))
    out = {}
    for n in names:
        with open(os.path.join(dir_, n), "rb") as f:
            b = f.read()
        hl = struct.unpack("<Q", b[:8])[0]
        header = json.loads(b[8:8 + hl])
        for name, e in header.items():
            if name == "__metadata__":
                continue
            lo, hi = e["data_offsets"]
            raw = b[8 + hl + lo:8 + hl + hi]
            if e["dtype"] == "BF16":
                a = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
            else:
                a = np.frombuffer(raw, dtype=DTYPES[e["dtype"]])
            out[name] = torch.from_numpy(a.astype(np.float64).reshape(e["shape"]))
    return out


def rms(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def main():
    dir_, ids = sys.argv[1], [int(t) for t in sys.argv[2:]]
    cfg = json.load(open(os.path.join(dir_, "config.json")))
    w = load(dir_)
    e, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or e // nh
    eps, theta = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    scaling = cfg.get("rope_scaling") or {}
    factor = scaling.get("factor", 1.0) if scaling.get("type", scaling.get("rope_type")) == "linear" else 1.0
    t = len(ids)
    pos = torch.arange(t, dtype=torch.float64) / factor
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.cat([pos[:, None] * inv[None, :]] * 2, dim=-1)
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]

    def rope(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    h = w["model.embed_tokens.weight"][ids]
    mask = torch.full((t, t), float("-inf"), dtype=torch.float64).triu(1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = rms(h, w[p + "input_layernorm.weight"], eps)
        def proj(n, heads):  # Qwen2: biases; Qwen3: RMS norm per head before RoPE
            y = x @ w[p + f"self_attn.{n}_proj.weight"].T
            if p + f"self_attn.{n}_proj.bias" in w:
                y = y + w[p + f"self_attn.{n}_proj.bias"]
            y = y.view(t, heads, hd)
            if p + f"self_attn.{n}_norm.weight" in w:
                y = rms(y, w[p + f"self_attn.{n}_norm.weight"], eps)
            return y
        q = rope(proj("q", nh))
        k = rope(proj("k", nkv))
        v = proj("v", nkv)
        k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
        s = torch.einsum("qhd,khd->hqk", q, k) / hd ** 0.5 + mask
        o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(t, nh * hd)
        h = h + o @ w[p + "self_attn.o_proj.weight"].T
        x = rms(h, w[p + "post_attention_layernorm.weight"], eps)
        if p + "block_sparse_moe.gate.weight" in w:  # Mixtral: softmax router, top-k experts, weights renormalised
            probs = torch.softmax(x @ w[p + "block_sparse_moe.gate.weight"].T, dim=-1)
            top, sel = torch.topk(probs, cfg["num_experts_per_tok"], dim=-1)
            top = top / top.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(h)
            for i in range(t):
                for r in range(sel.shape[1]):
                    xp = f"{p}block_sparse_moe.experts.{int(sel[i, r])}."
                    xi = x[i]
                    y = (torch.nn.functional.silu(xi @ w[xp + "w1.weight"].T) * (xi @ w[xp + "w3.weight"].T))
                    out[i] += top[i, r] * (y @ w[xp + "w2.weight"].T)
            h = h + out
            continue
        g = x @ w[p + "mlp.gate_proj.weight"].T
        h = h + (torch.nn.functional.silu(g) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    h = rms(h, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    for row in h @ head.T:
        print(" ".join("%.9g" % v for v in row.tolist()))


main()
