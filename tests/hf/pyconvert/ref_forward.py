# Reference forward pass of a Hugging Face LlamaForCausalLM / MistralForCausalLM /
# MixtralForCausalLM / Qwen2ForCausalLM / Qwen2MoeForCausalLM / Qwen3ForCausalLM /
# Qwen3MoeForCausalLM / Gemma3ForCausalLM / Gemma3ForConditionalGeneration (its text model) /
# Phi3ForCausalLM checkpoint (Phi3's fused qkv_proj and gate_up_proj split first), computed in
# float64 straight from its safetensors and config.json (as transformers' modeling code does:
# RMSNorm, rotate_half RoPE (on the first partial_rotary_factor of each head) with linear, llama3,
# YaRN or LongRoPE (Phi3) scaling, grouped-query
# causal attention with Qwen2's q/k/v biases and Qwen3's per-head q/k norms, SwiGLU; Mixtral's and
# Qwen MoE's softmax router over the experts, top num_experts_per_tok renormalised unless
# norm_topk_prob is false, Qwen2Moe's sigmoid-gated shared expert, the fused experts of newer
# transformers split first; Gemma3's scaled embedding, (1 + w) norms around attention and MLP, local
# layers with their own RoPE base, query_pre_attn_scalar, GELU (tanh) MLP and final logit soft-
# capping; FP8 releases' F8_E4M3 weights times their block scales),
# for scripts/check-convert-logits. Prints one line of logits per position.
#   ref_forward.py CHECKPOINT_DIR ID ID ...
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16}


def e4m3_table():
    """float8_e4m3fn's 256 values: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities."""
    v = np.zeros(256)
    for b in range(256):
        e, m = (b >> 3) & 15, b & 7
        mag = math.ldexp(m / 8, -6) if e == 0 else math.ldexp(1 + m / 8, e - 7)
        v[b] = math.nan if (e, m) == (15, 7) else (-mag if b & 0x80 else mag)
    return v


E4M3 = e4m3_table()


def dequant_fp8(dir_, out):
    """An FP8 release's weights (quantization_config.quant_method fp8): each <w>_scale_inv
    multiplies its weight per weight_block_size block (the last ones cut), or broadcast per row or
    per tensor without one, as transformers' fine-grained FP8 dequantizes."""
    with open(os.path.join(dir_, "config.json")) as f:
        q = json.load(f).get("quantization_config") or {}
    block = q.get("weight_block_size")
    for name in [n for n in out if n.endswith("_scale_inv")]:
        s, w = out.pop(name), name[: -len("_scale_inv")]
        rows, cols = out[w].shape
        if block:
            s = s.repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)[:rows, :cols]
        else:
            s = s.reshape(-1, 1) if s.numel() == rows else s.reshape(1, 1)
        out[w] = out[w] * s


def load(dir_):
    names = sorted(f for f in os.listdir(dir_) if f.startswith("model") and f.endswith(".safetensors"))
    out, f16 = {}, {}
    for n in names:
        with open(os.path.join(dir_, n), "rb") as f:
            b = f.read()
        hl = struct.unpack("<Q", b[:8])[0]
        header = json.loads(b[8:8 + hl])
        for name, e in header.items():
            if name == "__metadata__" or name.startswith(("vision_tower.", "multi_modal_projector.")):
                continue
            lo, hi = e["data_offsets"]
            raw = b[8 + hl + lo:8 + hl + hi]
            if e["dtype"] == "BF16":
                a = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif e["dtype"] == "F8_E4M3":
                a = E4M3[np.frombuffer(raw, dtype=np.uint8)]
            else:
                a = np.frombuffer(raw, dtype=DTYPES[e["dtype"]])
            name = name.replace("language_model.", "")  # Gemma3ForConditionalGeneration's text model
            out[name] = torch.from_numpy(a.astype(np.float64).reshape(e["shape"]))
            f16[name] = e["dtype"] == "F16"
    dequant_fp8(dir_, out)
    for name in [n for n in out if n.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))]:
        # newer transformers' fused Qwen MoE experts: [X, 2F, E] (gate rows, then up) and [X, E, F]
        t, base = out.pop(name), name.rsplit(".", 1)[0]
        for x in range(t.shape[0]):
            if name.endswith("gate_up_proj"):
                half = t.shape[1] // 2
                out[f"{base}.{x}.gate_proj.weight"], out[f"{base}.{x}.up_proj.weight"] = t[x, :half], t[x, half:]
            else:
                out[f"{base}.{x}.down_proj.weight"] = t[x]
    return out, f16


def gelu_as_ggml(x):
    """GELU (tanh) as llama.cpp's CPU backend computes it: through a table of halves (GGML_GELU_FP16 in
    ggml-cpu/vec.h: the input rounded to F16, the table's F16 value; 0 below -10, x above 10). The
    exact function differs from it by ~1e-3 relative, which would hide layout errors of that size."""
    g = torch.nn.functional.gelu(x.half().double(), approximate="tanh").half().double()
    return torch.where(x <= -10.0, torch.zeros_like(x), torch.where(x >= 10.0, x, g))


def rms(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def main():
    dir_, ids = sys.argv[1], [int(t) for t in sys.argv[2:]]
    cfg = json.load(open(os.path.join(dir_, "config.json")))
    cfg = {**cfg, **cfg.get("text_config", {})}
    w, f16 = load(dir_)
    e, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or e // nh
    rd = int(hd * cfg.get("partial_rotary_factor", 1.0))  # rotated dims per head (Phi3's partial rotary)
    eps, theta = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    scaling = cfg.get("rope_scaling") or {}
    rope_type = (scaling.get("rope_type") or scaling.get("type") or "default").lower()
    t = len(ids)
    gemma = cfg["architectures"][0].startswith("Gemma3")

    def scaled_inv_freq(inv):
        """transformers' modeling_rope_utils for the scaled types: the inverse frequencies and the
        factor cos/sin are multiplied by."""
        if rope_type == "linear":
            return inv / scaling["factor"], 1.0
        if rope_type == "llama3":
            factor, old = scaling["factor"], scaling["original_max_position_embeddings"]
            lo, hi = scaling["low_freq_factor"], scaling["high_freq_factor"]
            wavelen = 2 * math.pi / inv
            smooth = (old / wavelen - lo) / (hi - lo)
            out = torch.where(wavelen > old / lo, inv / factor, inv)
            medium = (wavelen >= old / hi) & (wavelen <= old / lo)
            return torch.where(medium, (1 - smooth) * out / factor + smooth * out, out), 1.0
        if rope_type == "yarn":
            factor = scaling["factor"]
            orig = scaling.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
            fast, slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

            def corr_dim(rot):
                return rd * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(theta))

            lo, hi = max(math.floor(corr_dim(fast)), 0), min(math.ceil(corr_dim(slow)), rd - 1)
            ramp = torch.clamp((torch.arange(rd // 2, dtype=torch.float64) - lo) / (hi - lo if hi != lo else 0.001), 0, 1)
            extrapolate = 1 - ramp
            attn = scaling.get("attention_factor") or (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0)
            return inv / factor * (1 - extrapolate) + inv * extrapolate, attn
        if rope_type in ("longrope", "su"):  # Phi3: the short factors for sequences within the original context
            orig = cfg["original_max_position_embeddings"]
            factor = cfg["max_position_embeddings"] / orig
            ext = torch.tensor(scaling["long_factor"] if t > orig else scaling["short_factor"], dtype=torch.float64)
            attn = math.sqrt(1 + math.log(factor) / math.log(orig)) if factor > 1 else 1.0
            return inv / ext, attn
        assert rope_type == "default", rope_type
        return inv, 1.0

    def angles(base, scaled):
        pos = torch.arange(t, dtype=torch.float64)
        inv, attn = 1.0 / base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd), 1.0
        if scaled:
            inv, attn = scaled_inv_freq(inv)
        ang = torch.cat([pos[:, None] * inv[None, :]] * 2, dim=-1)
        return attn * torch.cos(ang)[:, None, :], attn * torch.sin(ang)[:, None, :]

    rope_global = angles(theta, True)
    rope_local = angles(cfg.get("rope_local_base_freq", 10000.0), False)

    def rope(x, cs):  # the first rd dims of each head rotated, the rest passed through
        xr, xp = x[..., :rd], x[..., rd:]
        x1, x2 = xr[..., : rd // 2], xr[..., rd // 2:]
        return torch.cat([xr * cs[0] + torch.cat([-x2, x1], dim=-1) * cs[1], xp], dim=-1)

    def norm(x, name):  # Gemma3RMSNorm scales by (1 + w)
        if not gemma:
            return rms(x, w[name], eps)
        # The converter stores 1 + w computed in the checkpoint's dtype: rounded to F16 for an F16
        # checkpoint (torch adds in the tensor's dtype; BF16 is widened to F32 first).
        scale = 1.0 + w[name]
        return rms(x, scale.half().double() if f16[name] else scale, eps)

    for key in [k for k in w if k.endswith("self_attn.qkv_proj.weight")]:  # Phi3: q, k, v rows fused
        p = key[: -len("qkv_proj.weight")]
        q_rows, kv_rows = nh * hd, nkv * hd
        w[p + "q_proj.weight"], w[p + "k_proj.weight"], w[p + "v_proj.weight"] = torch.split(
            w[key], [q_rows, kv_rows, kv_rows])
    for key in [k for k in w if k.endswith("mlp.gate_up_proj.weight")]:  # Phi3: gate rows, then up rows
        p = key[: -len("gate_up_proj.weight")]
        w[p + "gate_proj.weight"], w[p + "up_proj.weight"] = torch.chunk(w[key], 2)
    h = w["model.embed_tokens.weight"][ids]
    if gemma:
        h = h * cfg["hidden_size"] ** 0.5
    pattern = cfg.get("sliding_window_pattern", 1) if gemma else 1
    mask = torch.full((t, t), float("-inf"), dtype=torch.float64).triu(1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        local = pattern > 1 and (layer + 1) % pattern != 0
        cs = rope_local if local else rope_global
        x = norm(h, p + "input_layernorm.weight")
        def proj(n, heads):  # Qwen2: biases; Qwen3: RMS norm per head before RoPE
            y = x @ w[p + f"self_attn.{n}_proj.weight"].T
            if p + f"self_attn.{n}_proj.bias" in w:
                y = y + w[p + f"self_attn.{n}_proj.bias"]
            y = y.view(t, heads, hd)
            if p + f"self_attn.{n}_norm.weight" in w:
                y = norm(y, p + f"self_attn.{n}_norm.weight")
            return y
        q = rope(proj("q", nh), cs)
        k = rope(proj("k", nkv), cs)
        v = proj("v", nkv)
        k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
        scale = cfg.get("query_pre_attn_scalar", hd) if gemma else hd
        s = torch.einsum("qhd,khd->hqk", q, k) / scale ** 0.5 + mask
        o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(t, nh * hd)
        o = o @ w[p + "self_attn.o_proj.weight"].T
        if gemma:  # sandwich norms; the sliding window (>= 512) is longer than the sequence
            h = h + norm(o, p + "post_attention_layernorm.weight")
            x = norm(h, p + "pre_feedforward_layernorm.weight")
            g = gelu_as_ggml(x @ w[p + "mlp.gate_proj.weight"].T)
            y = (g * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
            h = h + norm(y, p + "post_feedforward_layernorm.weight")
            continue
        h = h + o
        x = rms(h, w[p + "post_attention_layernorm.weight"], eps)
        # Mixtral (block_sparse_moe, w1/w3/w2) and Qwen3Moe (mlp.gate, gate/up/down_proj; norm_topk_prob):
        # softmax router, top-k experts, weights renormalised.
        moe = next((m for m in (("block_sparse_moe.", "w1", "w3", "w2"), ("mlp.", "gate_proj", "up_proj", "down_proj"))
                    if p + m[0] + "gate.weight" in w), None)
        if moe:
            mp, wg, wu, wd = moe
            probs = torch.softmax(x @ w[p + mp + "gate.weight"].T, dim=-1)
            top, sel = torch.topk(probs, cfg["num_experts_per_tok"], dim=-1)
            if cfg.get("norm_topk_prob", True):  # Qwen2Moe's false: the softmax weights as they are
                top = top / top.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(h)
            for i in range(t):
                for r in range(sel.shape[1]):
                    xp = f"{p}{mp}experts.{int(sel[i, r])}."
                    xi = x[i]
                    y = (torch.nn.functional.silu(xi @ w[xp + wg + ".weight"].T) * (xi @ w[xp + wu + ".weight"].T))
                    out[i] += top[i, r] * (y @ w[xp + wd + ".weight"].T)
            sp = p + mp + "shared_expert."
            if sp + "gate_proj.weight" in w:  # Qwen2Moe: a shared expert scaled by sigmoid(its gate)
                y = torch.nn.functional.silu(x @ w[sp + "gate_proj.weight"].T) * (x @ w[sp + "up_proj.weight"].T)
                out += torch.sigmoid(x @ w[p + mp + "shared_expert_gate.weight"].T) * (y @ w[sp + "down_proj.weight"].T)
            h = h + out
            continue
        g = x @ w[p + "mlp.gate_proj.weight"].T
        h = h + (torch.nn.functional.silu(g) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    h = norm(h, "model.norm.weight")
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    logits = h @ head.T
    if gemma and cfg.get("final_logit_softcapping"):
        cap = cfg["final_logit_softcapping"]
        logits = torch.tanh(logits / cap) * cap
    if "vocab_size" not in cfg and os.path.exists(os.path.join(dir_, "tokenizer.model")):
        # gemma-3-4b-it: rows past the SentencePiece vocabulary (image tokens) have no token; the
        # converter drops them, and the logits of the others do not depend on them.
        import sentencepiece
        n = sentencepiece.SentencePieceProcessor(model_file=os.path.join(dir_, "tokenizer.model")).vocab_size()
        logits = logits[:, :n]
    for row in logits:
        print(" ".join("%.9g" % v for v in row.tolist()))


main()
