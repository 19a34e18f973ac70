#!/usr/bin/env python3
"""Times the attention kernels of a planner-validate workload with PyTorch's fused attention.

planner-validate's own flash kernels (calibrate/flash_*.cu, WMMA) are checked for correctness but
are not tuned: they reach 30-70 TFLOP/s on an H200 where the production kernels the cost model
describes (FlashAttention-2/3, cuDNN) reach several hundred. This script measures those production
kernels at the workload's shapes so that `planner validate` can set the cost model's attention term
against a real fused kernel. It adds, to the runner's results JSON,

  "attention_reference": {"source": "...", "kernels_s": [seconds or null, one per workload kernel]}

and rewrites the file atomically. Optional: the planner reports without it.

  python3 calibrate/sdpa_reference.py --workload W.json --measured M.json [--backend cudnn,flash]

The first backend in the list that runs a shape times it (default cuDNN's fused attention, the
kernel Megatron-Core with Transformer Engine runs on Hopper, then FlashAttention-2).

Shapes: one head per batch entry, K and V with as many heads as Q (a GQA layer's FLOPs are the
same; its K/V reads are smaller than timed here). Causal, with as many keys as queries.

Timing: CUDA events around N calls after warm-up, the median of five such batches; the backward is
timed alone (torch.autograd.grad with retain_graph over one saved forward, so no gradient
accumulation kernel is counted).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile


def fail(msg):
    print(f"sdpa_reference: {msg}", file=sys.stderr)
    sys.exit(2)


def median_time(fn, torch, reps=10, batches=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times), (max(times) - min(times)) / statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", required=True)
    ap.add_argument("--measured", required=True, help="planner-validate's results JSON (updated in place)")
    ap.add_argument("--backend", default="cudnn,flash", help="comma-separated, in order of preference: cudnn, flash, efficient")
    a = ap.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F
    except ImportError as e:
        fail(f"PyTorch is not available ({e})")
    if not torch.cuda.is_available():
        fail("no CUDA device")
    try:
        with open(a.workload) as f:
            w = json.load(f)
        with open(a.measured) as f:
            measured = json.load(f)
    except (OSError, ValueError) as e:
        fail(str(e))
    if not isinstance(w, dict) or not isinstance(measured, dict):
        fail(f"{a.workload} and {a.measured} must each hold a JSON object")
    kernels = w.get("kernels")
    if not isinstance(kernels, list) or not all(isinstance(k, dict) for k in kernels) or \
            len(measured.get("kernels_s") or []) != len(kernels):
        fail(f"{a.measured}: kernels_s does not match {a.workload}'s kernels")
    # Only a flash workload has one fused kernel per pass to stand in for; with unfused attention
    # (batched GEMMs, softmax, dropout) there is nothing to add, and the file stays as it is.
    attention = [k for k in kernels if k.get("class") == "attention"]
    if not attention or any(k.get("name") != "flash_attention" for k in attention):
        print(f"# sdpa_reference: {a.workload} runs no fused attention kernel; {a.measured} left as it is")
        return
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(w.get("dtype"))
    if dtype is None:
        fail(f"{a.workload}: dtype {w.get('dtype')!r} is not timed here (bf16, fp16)")
    known = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
             "efficient": SDPBackend.EFFICIENT_ATTENTION}
    names = [b.strip() for b in a.backend.split(",") if b.strip()]
    if not names or any(b not in known for b in names):
        fail(f"--backend {a.backend!r}: expected a list of {', '.join(known)}")

    cache, used = {}, set()
    out = [None] * len(kernels)
    for i, k in enumerate(kernels):
        if k.get("name") != "flash_attention":
            continue
        try:
            bh, sq, sk, d = int(k["batch"]), int(k["m"]), int(k["n"]), int(k["k"])
        except (KeyError, TypeError, ValueError):
            fail(f"{a.workload}: kernel {i} lacks a batch, m, n or k")
        if sq != sk:  # context parallelism: PyTorch's causal mask is top-left, not this shard's
            fail(f"{a.workload}: kernel {i} has {sq} queries against {sk} keys; only sq = sk is timed here")
        key = (bh, sq, sk, d)
        if key not in cache:
            torch.manual_seed(0)
            q, kk, v = (torch.randn(1, bh, s, d, device="cuda", dtype=dtype, requires_grad=True)
                        for s in (sq, sk, sk))
            g = torch.randn(1, bh, sq, d, device="cuda", dtype=dtype)
            for name in names:
                try:
                    with sdpa_kernel([known[name]]):
                        fwd_s, fwd_spread = median_time(
                            lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=True), torch)
                        o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
                        bwd_s, bwd_spread = median_time(
                            lambda: torch.autograd.grad(o, (q, kk, v), g, retain_graph=True), torch)
                    break
                except RuntimeError as e:
                    print(f"#   SDPA {name} refused bh={bh} sq={sq} d={d}: {str(e).splitlines()[0]}")
            else:
                fail(f"no backend of {a.backend} runs bh={bh} sq={sq} sk={sk} d={d}")
            cache[key] = (fwd_s, bwd_s)
            used.add(name)
            flops = 4.0 * bh * sq * sk * d / 2  # causal: half the score matrix
            print(f"#   SDPA {name} bh={bh} sq={sq} sk={sk} d={d} causal: forward {fwd_s * 1e6:.1f} us "
                  f"({flops / fwd_s / 1e12:.0f} TFLOP/s, spread {fwd_spread:.1%}), backward {bwd_s * 1e6:.1f} us "
                  f"({2.5 * flops / bwd_s / 1e12:.0f} TFLOP/s, spread {bwd_spread:.1%})")
            del q, kk, v, o, g
            torch.cuda.empty_cache()
        fwd_s, bwd_s = cache[key]
        out[i] = fwd_s if k.get("pass") == "forward" else bwd_s
    measured["attention_reference"] = {
        "source": f"PyTorch {torch.__version__} scaled_dot_product_attention ({'/'.join(sorted(used))} backend, causal), "
                  f"{torch.cuda.get_device_name()}",
        "kernels_s": out,
    }
    folder = os.path.dirname(os.path.abspath(a.measured))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sdpa-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(measured, f, indent=2, allow_nan=False)
        os.chmod(tmp, os.stat(a.measured).st_mode & 0o777)
        os.replace(tmp, a.measured)
    except (OSError, ValueError) as e:
        os.unlink(tmp)
        fail(f"could not rewrite {a.measured}: {e}")
    print(f"# attention_reference added to {a.measured}")


if __name__ == "__main__":
    main()
