"""torchrun smoke test of ccltune with CUDA graph capture: eager all-reduces (tuning), one captured
into a CUDA graph and replayed, then eager calls again; every result checked. Run with and without
LD_PRELOAD=libccltune.so:

  torchrun --nproc-per-node=4 bench/torch/graph_smoke.py
"""
import faulthandler
import os
import sys

import torch
import torch.distributed as dist


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    # A hang prints every thread's stack instead of dying silently at the launcher's timeout.
    faulthandler.dump_traceback_later(int(os.environ.get("SMOKE_TIMEOUT_S", "120")), exit=True)

    def step(msg):
        if rank == 0:
            print(f"graph smoke: {msg}", file=sys.stderr, flush=True)

    errors = 0
    x = torch.empty(1 << 20, device="cuda")  # 4 MiB fp32

    def eager(n):
        nonlocal errors
        for _ in range(n):
            x.fill_(1.0)
            dist.all_reduce(x)
        torch.cuda.synchronize()
        errors += 0 if bool(torch.all(x == float(world))) else 1

    eager(300)  # ccltune searches and converges here
    step("eager phase done")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(side)
    step("side-stream warm-up done")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dist.all_reduce(x)
    step("captured")
    for _ in range(50):
        x.fill_(1.0)
        graph.replay()
        torch.cuda.synchronize()
        errors += 0 if bool(torch.all(x == float(world))) else 1
    step("replayed")
    eager(300)  # eager again after the capture
    step("second eager phase done")
    # NCCL keeps resources for collectives captured in a graph until the graph is destroyed; destroy
    # it before the process group, or the communicator's destruction waits for it.
    del graph
    torch.cuda.synchronize()
    err = torch.tensor([errors], device="cuda")
    dist.all_reduce(err)
    if rank == 0:
        print(f"graph smoke: check errors {int(err.item())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
