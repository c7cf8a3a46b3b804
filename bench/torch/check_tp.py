"""Checks models.TPGPT against the same model on one rank: the tensor-parallel shards of every rank are gathered into
a TP-degree-1 model, and loss and gradients must agree (float64). Both modes, any world size, CPU/gloo:

  python3 -m torch.distributed.run --nproc-per-node=4 bench/torch/check_tp.py
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import TPConfig, TPGPT  # noqa: E402


def check(mode, group, solo, rank, world):
    cfg = TPConfig(vocab=64, d=32, heads=4, layers=2, seq=8, mode=mode)
    torch.manual_seed(100 + rank)
    tp = TPGPT(cfg, group, torch.float64)
    full = TPGPT(TPConfig(vocab=64, d=32, heads=4, layers=2, seq=8), solo, torch.float64)

    def gather(t, dim):
        parts = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(parts, t.contiguous(), group=group)
        return torch.cat(parts, dim)

    heads, hd, d = cfg.heads, cfg.d // cfg.heads, cfg.d
    hl = heads // world

    def qkv_full(w):  # rank r holds heads r*hl..(r+1)*hl-1 of each of q, k, v
        return gather(w.view(3, hl, hd, d), 1).reshape(3 * heads * hd, d)

    with torch.no_grad():
        full.emb.weight.copy_(gather(tp.emb.weight, 0))
        full.head.weight.copy_(gather(tp.head.weight, 0))
        full.ln_f.load_state_dict(tp.ln_f.state_dict())
        for bt, bf in zip(tp.blocks, full.blocks):
            bf.ln1.load_state_dict(bt.ln1.state_dict())
            bf.ln2.load_state_dict(bt.ln2.state_dict())
            bf.qkv.weight.copy_(qkv_full(bt.qkv.weight))
            bf.proj.weight.copy_(gather(bt.proj.weight, 1))
            bf.fc1.weight.copy_(gather(bt.fc1.weight, 0))
            bf.fc2.weight.copy_(gather(bt.fc2.weight, 1))
    torch.manual_seed(5)
    idx, tgt = torch.randint(0, cfg.vocab, (8, 2)), torch.randint(0, cfg.vocab, (8, 2))
    lt = tp(idx, tgt)
    lt.backward()
    tp.sync_replicated_grads()
    lf = full(idx, tgt)
    lf.backward()
    checks = {
        "loss": torch.allclose(lt, lf),
        "embedding grad": torch.allclose(gather(tp.emb.weight.grad, 0), full.emb.weight.grad),
        "qkv grad": torch.allclose(qkv_full(tp.blocks[1].qkv.weight.grad), full.blocks[1].qkv.weight.grad),
        "proj grad": torch.allclose(gather(tp.blocks[0].proj.weight.grad, 1), full.blocks[0].proj.weight.grad),
        "fc2 grad": torch.allclose(gather(tp.blocks[0].fc2.weight.grad, 1), full.blocks[0].fc2.weight.grad),
        "layernorm grad": torch.allclose(tp.blocks[0].ln1.weight.grad, full.blocks[0].ln1.weight.grad),
        "head grad": torch.allclose(gather(tp.head.weight.grad, 0), full.head.weight.grad),
    }
    return checks


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.new_group(list(range(world)))
    solo = [dist.new_group([r]) for r in range(world)][rank]
    failed = 0
    for mode in ("allreduce", "sp"):
        checks = check(mode, group, solo, rank, world)
        bad = [k for k, ok in checks.items() if not ok]
        failed += len(bad)
        if rank == 0 or bad:
            verdict = "ok" if not bad else "MISMATCH: " + ", ".join(bad)
            print(f"check_tp rank {rank}, {world} ranks, {mode}: {verdict}", flush=True)
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
