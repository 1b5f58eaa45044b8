#!/usr/bin/env python3
"""Cross-check of `tacit bench pir backends --backend lwe-gpu`'s floors with PyTorch
(on the GPU machine, which has it): one read of an m x l int8 table, and the int8
tensor-core product (cuBLASLt through torch._int_mm) of that table with 4*B limb
columns, the shape of a batch of B SimplePIR queries cut into 4 signed bytes.

    python3 bench/gpu_floor.py --rows 20254 --cols 20256 --batch 4096
"""
import argparse
import json

import torch


def timed(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True, help="matrix rows m (answer length)")
    ap.add_argument("--cols", type=int, required=True, help="matrix columns l (query length, a multiple of 8)")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    dev = torch.device("cuda")
    d = torch.randint(-128, 128, (a.rows, a.cols), dtype=torch.int8, device=dev)
    words = d.view(-1)[: (d.numel() // 8) * 8].view(torch.int64)
    read_ms = timed(lambda: words.sum(), a.reps)
    limbs = torch.randint(-128, 128, (a.cols, 4 * a.batch), dtype=torch.int8, device=dev)
    mm_ms = timed(lambda: torch._int_mm(d, limbs), a.reps)
    print(json.dumps({
        "device": torch.cuda.get_device_name(0),
        "rows": a.rows, "cols": a.cols, "batch": a.batch,
        "torch_read_ms": read_ms,
        "torch_int_mm_ms": mm_ms,
        "torch_int_mm_queries_per_s": a.batch / mm_ms * 1e3,
    }))


if __name__ == "__main__":
    main()
