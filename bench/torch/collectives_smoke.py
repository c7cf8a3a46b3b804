"""torchrun smoke test of ccltune under PyTorch: all-reduce, all-gather and reduce-scatter loops of a
few sizes through torch.distributed (ProcessGroupNCCL), results checked, per-size median times of the
first and the last calls printed by rank 0. Run it with and without LD_PRELOAD=libccltune.so:

  torchrun --nproc-per-node=4 bench/torch/collectives_smoke.py [--iters 600]
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist


def timed(fn, iters):
    """Runs fn iters times; returns per-call times in microseconds (CUDA events)."""
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        times.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1000.0 for a, b in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=600)
    ap.add_argument("--sizes", default="1M,4M,16M")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    errors = 0
    for tok in args.sizes.split(","):
        nbytes = int(tok[:-1]) << (20 if tok.endswith("M") else 10)
        n = nbytes // 2  # bf16 elements
        x = torch.full((n,), float(rank + 1), dtype=torch.bfloat16, device="cuda")
        out = torch.empty(n * world, dtype=torch.bfloat16, device="cuda")
        rs = torch.empty(n, dtype=torch.bfloat16, device="cuda")
        big = torch.full((n * world,), 1.0, dtype=torch.bfloat16, device="cuda")
        cases = {
            "all_reduce": lambda: dist.all_reduce(x),
            "all_gather": lambda: dist.all_gather_into_tensor(out, x),
            "reduce_scatter": lambda: dist.reduce_scatter_tensor(rs, big),
        }
        for name, fn in cases.items():
            t = timed(fn, args.iters)
            # Check with fresh data after the loop (the config in use is then the converged one).
            x.fill_(float(rank + 1))
            big.fill_(1.0)
            fn()
            torch.cuda.synchronize()
            if name == "all_reduce":
                ok = bool(torch.all(x == float(world * (world + 1) // 2)))
            elif name == "all_gather":
                ok = all(bool(torch.all(out[r * n:(r + 1) * n] == float(r + 1))) for r in range(world))
            else:
                ok = bool(torch.all(rs == float(world)))
            errors += 0 if ok else 1
            if rank == 0:
                first = statistics.median(t[10:60])
                last = statistics.median(t[-100:])
                print(f"{name:15s} {tok:>4s}  first-50 median {first:8.2f} us  last-100 median {last:8.2f} us  "
                      f"ratio {first / last:5.3f}  check {'ok' if ok else 'FAILED'}", flush=True)
            x.fill_(float(rank + 1))
    err = torch.tensor([errors], device="cuda")
    dist.all_reduce(err)
    if rank == 0:
        print(f"check errors: {int(err.item())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
