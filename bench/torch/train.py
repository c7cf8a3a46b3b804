"""Training-step workloads of the PyTorch evaluation of ccltune, plain PyTorch, one process per GPU under torchrun:

  ddp       a GPT-style decoder (models.GPT, ~340M parameters by default) under DistributedDataParallel: gradient
            bucket all-reduce (fp32, 25 MiB buckets), bf16 autocast
  fsdp      the same model under FSDP2 (fully_shard per block and at the root): all-gather of bf16 parameters,
            reduce-scatter of fp32 gradients
  tp        Megatron-style tensor-parallel decoder blocks (models.TPGPT, TP degree = world size): an all-reduce of
            bf16 activations after every row-parallel layer forward and before every column-parallel layer backward
            (--tp-mode sp: all-gather/reduce-scatter instead), vocab-parallel embedding and cross-entropy
  tp_graph  the tp workload with forward+backward captured in one CUDA graph after eager warm-up steps, replayed
            for the remaining steps (the optimizer step stays eager)

  python3 -m torch.distributed.run --nproc-per-node=N bench/torch/train.py --workloads ddp,fsdp,tp,tp_graph --out DIR

Several workloads run one after the other in one job (phases); each phase creates its own process group (an NCCL
communicator split from the default one) and destroys it at its end, so ccltune tunes each phase on its own
communicator. Every step ends with one coalesced group of two all-reduces on the phase's group (loss, a stop flag
and the previous step's time; a token count), as training loops that log every step do; it makes the host wait for
the step, so the step time is wall time from the host.

--mode fixed runs --steps steps per phase. --mode tune runs until ccltune reports the phase converged (searching
done, no update for --settle steps; every rank must agree, through the flag in the per-step all-reduce) and
then --post steps more, at most --tune-max steps. Rank 0 writes DIR/<workload>.json at the end of each phase: step
times, losses, ccltune's summary after every step (ccltuneGetSummary, found through ctypes when libccltune.so is
preloaded; null without it), environment and sizes. Data are synthetic (a fixed pool of seeded token batches),
initialisation is seeded, so losses are reproducible run to run. --device cpu --backend gloo --tiny runs the same
code on a CPU in seconds (no CUDA graph there: tp_graph then runs eagerly and says so).
"""
import argparse
import ctypes
import faulthandler
import gc
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_stats import ready_to_capture, settled  # noqa: E402
from models import GPT, GPTConfig, TPConfig, TPGPT, human_bytes, tp_comm_volume, tp_params_per_rank  # noqa: E402

WORKLOADS = ("ddp", "fsdp", "tp", "tp_graph")
ENV_PREFIXES = ("CCLTUNE_", "NCCL_", "TORCH_NCCL_", "LD_PRELOAD", "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS")


# ---------------------------------------------------------------------------------------------------------------
# ccltune's process summary, through ctypes (include/ccltune/ccltune.h: ccltuneSummary_t)


class _Summary(ctypes.Structure):
    _fields_ = [("communicators", ctypes.c_int), ("workloads", ctypes.c_int), ("pending", ctypes.c_int),
                ("searching", ctypes.c_int), ("converged", ctypes.c_int), ("other", ctypes.c_int),
                ("calls", ctypes.c_int64), ("changes", ctypes.c_int64)]


class Ccltune:
    """ccltune's public C API if the process has it (preloaded or linked); every call returns None without it."""

    def __init__(self):
        self._summary = self._active = None
        try:
            lib = ctypes.CDLL(None)
        except OSError:
            return
        try:
            self._summary = lib.ccltuneGetSummary
            self._summary.argtypes = [ctypes.POINTER(_Summary)]
            self._summary.restype = ctypes.c_int
        except AttributeError:
            self._summary = None
        try:
            self._active = lib.ccltuneIsActive
            self._active.restype = ctypes.c_int
        except AttributeError:
            self._active = None

    def loaded(self):
        return self._summary is not None or self._active is not None

    def active(self):
        return None if self._active is None else bool(self._active())

    def summary(self):
        if self._summary is None:
            return None
        s = _Summary()
        if self._summary(ctypes.byref(s)) != 0:
            return None
        return {name: getattr(s, name) for name, _ in _Summary._fields_}


# ---------------------------------------------------------------------------------------------------------------
# Arguments


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workloads", default="ddp,fsdp,tp,tp_graph", help="comma-separated, run in this order")
    ap.add_argument("--mode", choices=("fixed", "tune"), default="fixed")
    ap.add_argument("--steps", type=int, default=15, help="fixed mode: steps per phase")
    ap.add_argument("--tune-min", type=int, default=20, help="tune mode: never stop before this many steps")
    ap.add_argument("--tune-max", type=int, default=250, help="tune mode: stop here even if not converged")
    ap.add_argument("--settle", type=int, default=8, help="tune mode: steps without search or update = converged")
    ap.add_argument("--post", type=int, default=15, help="tune mode: steps run after convergence")
    ap.add_argument("--eager-min", type=int, default=4, help="tp_graph: eager steps before the capture, at least")
    ap.add_argument("--eager-max", type=int, default=20,
                    help="tp_graph, fixed mode: eager steps at most while waiting for ccltune to settle (import)")
    ap.add_argument("--out", default=None, help="directory for the per-phase JSON files (rank 0)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--backend", choices=("nccl", "gloo"), default=None, help="default: nccl on cuda, gloo on cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (CPU validation)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--data-batches", type=int, default=8, help="size of the pool of synthetic batches")
    ap.add_argument("--timeout-s", type=float, default=0, help="dump all stacks and exit after this many seconds")
    ap.add_argument("--no-deterministic", action="store_true", help="leave torch's non-deterministic kernels on")
    g = ap.add_argument_group("GPT model (ddp, fsdp)")
    g.add_argument("--vocab", type=int, default=None, help="default 32768 (tiny: 512)")
    g.add_argument("--gpt-d", type=int, default=None, help="default 1024 (tiny: 64)")
    g.add_argument("--gpt-heads", type=int, default=None, help="default 16 (tiny: 4)")
    g.add_argument("--gpt-layers", type=int, default=None, help="default 24 (tiny: 2)")
    g.add_argument("--gpt-seq", type=int, default=None, help="default 1024 (tiny: 32)")
    g.add_argument("--gpt-batch", type=int, default=None, help="sequences per rank, default 4 (tiny: 2)")
    g.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    g = ap.add_argument_group("tensor-parallel model (tp, tp_graph)")
    g.add_argument("--tp-d", type=int, default=None, help="hidden size, default 4096 (tiny: 64)")
    g.add_argument("--tp-heads", type=int, default=None, help="default 32 (tiny: 4)")
    g.add_argument("--tp-layers", type=int, default=None, help="default 8 (tiny: 2)")
    g.add_argument("--tp-seq", type=int, default=None, help="default 2048 (tiny: 32)")
    g.add_argument("--tp-batch", type=int, default=None, help="default 1 (tiny: 2)")
    g.add_argument("--tp-mode", choices=("allreduce", "sp"), default="allreduce")
    args = ap.parse_args(argv)
    tiny = args.tiny
    defaults = dict(vocab=(512, 32768), gpt_d=(64, 1024), gpt_heads=(4, 16), gpt_layers=(2, 24), gpt_seq=(32, 1024),
                    gpt_batch=(2, 4), tp_d=(64, 4096), tp_heads=(4, 32), tp_layers=(2, 8), tp_seq=(32, 2048),
                    tp_batch=(2, 1))
    for k, (small, big) in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, small if tiny else big)
    args.backend = args.backend or ("nccl" if args.device == "cuda" else "gloo")
    args.workloads = [w for w in args.workloads.split(",") if w]
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    return args


# ---------------------------------------------------------------------------------------------------------------
# Workloads: each has setup(), step(i) -> loss tensor, and optionally capture(); comm() describes its traffic.


def device_index():
    """This rank's GPU: its local rank, modulo the GPUs it sees. On the one-GPU testbed (scripts/gpu-testbed.sh:
    several ranks on one GPU, each reporting a host of its own) every rank uses GPU 0."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return local % n if n > 0 else local


class Context:
    def __init__(self, args):
        self.args = args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.local = device_index()
        self.cuda = args.device == "cuda"
        self.device = torch.device("cuda", self.local) if self.cuda else torch.device("cpu")
        self.dtype = torch.bfloat16 if self.cuda else torch.float32

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def token_pool(ctx, n, batch, seq, vocab, seed):
    """n batches of (idx, targets), [batch, seq] each, seeded: the same in every run for the same seed."""
    g = torch.Generator().manual_seed(seed)
    pool = []
    for _ in range(n):
        t = torch.randint(0, vocab, (batch, seq + 1), generator=g)
        pool.append((t[:, :-1].contiguous().to(ctx.device), t[:, 1:].contiguous().to(ctx.device)))
    return pool


class GPTWorkload:
    """DDP or FSDP2 over models.GPT; each rank trains on its own seeded data (data parallel)."""

    def __init__(self, ctx, group, kind):
        a = ctx.args
        self.ctx, self.group, self.kind = ctx, group, kind
        self.cfg = GPTConfig(vocab=a.vocab, d=a.gpt_d, heads=a.gpt_heads, layers=a.gpt_layers, seq=a.gpt_seq)
        torch.manual_seed(a.seed)  # identical initialisation on every rank
        with torch.device(ctx.device):
            model = GPT(self.cfg)
        if kind == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP
            self.model = DDP(model, device_ids=[ctx.local] if ctx.cuda else None, process_group=group,
                             bucket_cap_mb=a.bucket_mb)
            self.autocast = ctx.cuda
        else:
            from torch.distributed.device_mesh import DeviceMesh
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
            mesh = DeviceMesh.from_group(group, ctx.device.type)
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if ctx.cuda else None
            kw = {"mesh": mesh} if mp is None else {"mesh": mesh, "mp_policy": mp}
            for blk in model.blocks:
                fully_shard(blk, **kw)
            fully_shard(model, **kw)
            self.model = model
            self.autocast = False  # FSDP2's policy casts parameters to bf16
        # Fused AdamW for DDP's plain tensors; FSDP2's DTensor parameters take the default (foreach) path.
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=a.lr, fused=ctx.cuda and kind == "ddp")
        self.data = token_pool(ctx, a.data_batches, a.gpt_batch, self.cfg.seq, self.cfg.vocab,
                               a.seed * 7919 + 1 + ctx.rank)

    def step(self, i):
        idx, tgt = self.data[i % len(self.data)]
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.ctx.device.type, dtype=torch.bfloat16, enabled=self.autocast, cache_enabled=False):
            loss = self.model(idx, tgt)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def comm(self):
        p = self.cfg.params()
        d = self.cfg.d
        block = 12 * d * d + 13 * d
        root = p - self.cfg.layers * block
        a = self.ctx.args
        if self.kind == "ddp":
            out = {"params": p, "per_step": [["allreduce fp32 (gradient buckets)", p * 4, None]],
                   "bucket_cap_mb": a.bucket_mb}
            try:
                sizes = self.model._get_ddp_logging_data().get("bucket_sizes")
                if sizes:
                    out["bucket_sizes"] = [int(x) for x in str(sizes).split(",") if x.strip()]
            except Exception:  # private API: informative only
                pass
            return out
        e, dt = (2, "bf16") if self.ctx.cuda else (4, "fp32")
        return {"params": p, "per_step": [
            [f"allgather {dt} (block parameters, forward and backward)", block * e, 2 * self.cfg.layers],
            ["reducescatter fp32 (block gradients)", block * 4, self.cfg.layers],
            [f"allgather {dt} (root: embeddings, final LayerNorm)", root * e, 1],
            ["reducescatter fp32 (root gradients)", root * 4, 1]]}


class TPWorkload:
    """models.TPGPT over the phase's group; every rank sees the same tokens. graph=True: capture()."""

    def __init__(self, ctx, group, graph):
        a = ctx.args
        self.ctx, self.group, self.graph_wanted = ctx, group, graph
        self.cfg = TPConfig(vocab=a.vocab, d=a.tp_d, heads=a.tp_heads, layers=a.tp_layers, seq=a.tp_seq,
                            mode=a.tp_mode)
        torch.manual_seed(a.seed * 1000 + ctx.rank)  # each rank creates its own shards
        with torch.device(ctx.device):
            self.model = TPGPT(self.cfg, group, ctx.dtype)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=a.lr, fused=ctx.cuda)
        pool = token_pool(ctx, a.data_batches, a.tp_batch, self.cfg.seq, self.cfg.vocab, a.seed * 7919 + 2)
        self.data = [(x.t().contiguous(), y.t().contiguous()) for x, y in pool]  # [S, B]
        self.graph = None
        self.side = torch.cuda.Stream() if ctx.cuda and graph else None
        if self.side is not None:
            # Eager steps before the capture run on a side stream, as PyTorch's whole-network capture recipe asks.
            self.side.wait_stream(torch.cuda.current_stream())

    def _fwd_bwd(self, idx, tgt):
        loss = self.model(idx, tgt)
        loss.backward()
        self.model.sync_replicated_grads()
        return loss.detach()

    def step(self, i):
        idx, tgt = self.data[i % len(self.data)]
        if self.graph is not None:
            self.static_idx.copy_(idx)
            self.static_tgt.copy_(tgt)
            self.graph.replay()
            self.opt.step()  # gradients stay the graph's static tensors: never set them to None
            return self.static_loss.clone()
        self.opt.zero_grad(set_to_none=True)
        if self.side is not None:
            with torch.cuda.stream(self.side):
                loss = self._fwd_bwd(idx, tgt)
                self.opt.step()
            torch.cuda.current_stream().wait_stream(self.side)
            return loss
        loss = self._fwd_bwd(idx, tgt)
        self.opt.step()
        return loss

    def capture(self):
        """Captures forward+backward into a CUDA graph; later steps replay it. Returns why not, or None."""
        if not self.ctx.cuda:
            return "no CUDA graphs on cpu: ran eagerly"
        torch.cuda.synchronize()
        idx, tgt = self.data[0]
        self.static_idx, self.static_tgt = idx.clone(), tgt.clone()
        self.opt.zero_grad(set_to_none=True)  # gradients are then allocated by the capture, from its pool
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.static_loss = self._fwd_bwd(self.static_idx, self.static_tgt)
        torch.cuda.synchronize()
        self.graph = g
        self.side = None
        return None

    def release(self):
        # NCCL keeps a communicator's resources while a graph holds its collectives: drop the graph before the group.
        self.graph = None
        if self.ctx.cuda:
            torch.cuda.synchronize()

    def comm(self):
        tokens = self.cfg.seq * self.ctx.args.tp_batch
        e = 2 if self.ctx.cuda else 4
        return {"params_per_rank": tp_params_per_rank(self.cfg, self.ctx.world), "mode": self.cfg.mode,
                "per_step": [[n, b, c] for n, b, c in tp_comm_volume(self.cfg, tokens, e)]}


# ---------------------------------------------------------------------------------------------------------------
# The step loop


class StepLog:
    """The per-step logging group: fp32 [loss, stop flag, previous step's ms] and fp32 [tokens] summed over the
    phase's ranks. On NCCL both go out as one coalesced group (ncclGroupStart/End around two all-reduces). The op is
    SUM for both: PyTorch's coalescing fast path applies the first call's reduction to every tensor, and it takes
    tensors of one dtype only (allreduce_coalesced: "Tensors must have identical type"), so the token count is an
    fp32 too (exact: a step's tokens over all ranks stay far below 2^24)."""

    def __init__(self, ctx, group, tokens):
        self.ctx, self.group, self.tokens = ctx, group, tokens
        self.sums = torch.zeros(3, device=ctx.device)
        self.count = torch.zeros(1, device=ctx.device)

    def __call__(self, loss, flag, prev_ms):
        self.sums[0].copy_(loss.float())
        self.sums[1].fill_(1.0 if flag else 0.0)
        self.sums[2].fill_(prev_ms)
        self.count.fill_(self.tokens)
        if self.ctx.args.backend == "nccl":
            with dist._coalescing_manager(group=self.group, device=self.ctx.device, async_ops=True) as cm:
                dist.all_reduce(self.sums, group=self.group)
                dist.all_reduce(self.count, group=self.group)
            cm.wait()
        else:  # gloo does not coalesce
            dist.all_reduce(self.sums, group=self.group)
            dist.all_reduce(self.count, group=self.group)
        s = self.sums.tolist()
        w = self.ctx.world
        return s[0] / w, int(round(s[1])), s[2] / w, int(round(self.count.item()))


def run_phase(ctx, name, ccl, out_dir):
    a = ctx.args
    t_setup = time.perf_counter()
    group = dist.new_group(ranks=list(range(ctx.world)), backend=a.backend)
    if name in ("ddp", "fsdp"):
        wl = GPTWorkload(ctx, group, name)
    else:
        wl = TPWorkload(ctx, group, graph=(name == "tp_graph"))
    tokens = a.gpt_batch * a.gpt_seq if name in ("ddp", "fsdp") else a.tp_batch * a.tp_seq
    log = StepLog(ctx, group, tokens)
    ctx.sync()
    setup_s = time.perf_counter() - t_setup
    start = ccl.summary()
    base_changes = start["changes"] if start else 0
    steps, summaries = [], []
    capture = None
    stop_at = None  # step after which tune mode stops (post steps counted from there)
    eager_done = name != "tp_graph"
    limit = a.tune_max if a.mode == "tune" else a.steps
    prev_ms = 0.0
    # Test hook of the driver's failure handling: BENCH_TORCH_FAULT=WORKLOAD:hang|crash[:RANK] at step 2.
    fault = os.environ.get("BENCH_TORCH_FAULT", "").split(":")
    fault_here = fault[0] == name and (len(fault) < 3 or fault[2] == str(ctx.rank))
    t_phase = time.perf_counter()
    i = 0
    while i < limit:
        # This rank's opinion, sent with this step's log: tune mode, converged; tp_graph, ready to capture.
        if a.mode == "tune":
            flag = stop_at is None and settled(summaries, base_changes, a.settle, i, a.tune_min)
        elif not eager_done:
            flag = ready_to_capture(summaries, base_changes, i, a.eager_min, min(a.eager_max, a.steps - 2))
        else:
            flag = False
        if fault_here and i == 2:
            print(f"[train] rank {ctx.rank}: BENCH_TORCH_FAULT: {':'.join(fault)}", flush=True)
            if fault[1] == "hang":
                time.sleep(1e6)
            raise RuntimeError("BENCH_TORCH_FAULT")
        ctx.sync()
        t0 = time.perf_counter()
        loss = wl.step(i)
        loss_v, agree, mean_prev, _ = log(loss, flag, prev_ms)
        ctx.sync()
        ms = (time.perf_counter() - t0) * 1000.0
        summ = ccl.summary()
        summaries.append(summ)
        if steps:
            steps[-1]["mean_ms_ranks"] = mean_prev
        steps.append({"ms": ms, "loss": loss_v, "graph": wl_graph_live(wl), "summary": summ})
        prev_ms = ms
        i += 1
        all_agree = agree == ctx.world
        if a.mode == "tune" and stop_at is None and all_agree:
            stop_at = i
            limit = min(a.tune_max, i + a.post)
        if not eager_done and (all_agree or (a.mode == "tune" and stop_at is not None)
                               or (a.mode == "tune" and i >= a.tune_max - a.post)):
            eager_done = True
            before = ccl.summary()
            t_cap = time.perf_counter()
            why_not = wl.capture()
            capture = {"after_step": i, "seconds": time.perf_counter() - t_cap, "summary": before,
                       "captured": why_not is None, "note": why_not}
            if a.mode == "tune" and stop_at is None:
                limit = min(limit, i + a.post)
    wall_s = time.perf_counter() - t_phase
    end = ccl.summary()  # before the phase's communicator is destroyed (its workloads leave the summary then)
    comm = wl.comm()
    if hasattr(wl, "release"):
        wl.release()
    del wl, log
    gc.collect()
    dist.destroy_process_group(group)
    if ctx.cuda:
        torch.cuda.empty_cache()
    result = {
        "workload": name, "status": "ok", "mode": a.mode, "world": ctx.world, "setup_s": setup_s, "wall_s": wall_s,
        "steps": steps, "summary_at_start": start, "summary_at_end": end,
        "summary_after_destroy": ccl.summary(), "converged_flag_at": stop_at,
        "capture": capture, "comm": comm,
    }
    if ctx.rank == 0:
        med = sorted(s["ms"] for s in steps[min(3, len(steps) - 1):])
        stop = f", tune stop after step {stop_at}" if stop_at else ""
        print(f"[train] {name}: {len(steps)} steps, median {med[len(med) // 2]:.2f} ms, last loss "
              f"{steps[-1]['loss']:.4f}, setup {setup_s:.1f} s{stop}", flush=True)
        for what, nbytes, calls in comm.get("per_step", []):
            print(f"[train] {name}:   {what}: {human_bytes(nbytes)}" + (f" x {calls}" if calls else "") +
                  " per step", flush=True)
        if out_dir:
            write_json(os.path.join(out_dir, f"{name}.json"), dict(result, meta=meta(ctx, ccl)))
    return result


def wl_graph_live(wl):
    return getattr(wl, "graph", None) is not None


def meta(ctx, ccl):
    a = ctx.args
    info = {"args": {k: v for k, v in vars(a).items()}, "world": ctx.world, "torch": torch.__version__,
            "backend": a.backend, "device": a.device, "ccltune_loaded": ccl.loaded(), "ccltune_active": ccl.active(),
            "env": {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}}
    if ctx.cuda:
        info["gpu"] = torch.cuda.get_device_name(ctx.device)
        try:
            info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception:
            info["nccl"] = None
    return info


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def main(argv=None):
    a = parse_args(argv)
    if a.timeout_s > 0:
        # A hang dumps every thread's stack and exits instead of waiting for the driver's kill.
        faulthandler.dump_traceback_later(a.timeout_s, exit=True)
    if not a.no_deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        # Deterministic mode would also fill every new tensor with NaN: a cost per allocation that measures nothing.
        torch.utils.deterministic.fill_uninitialized_memory = False
        # The fused attention kernels' backward passes are not deterministic (cuDNN's says so in a warning; flash and
        # memory-efficient accumulate with atomics), and on H200 their run-to-run noise in the loss is as large as
        # any reduction-order difference a collective config makes, which would hide the comparison the losses are
        # for. The math kernel is deterministic: with it, jobs without ccltune give bitwise-equal losses.
        torch.backends.cuda.enable_cudnn_sdp(False)
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_math_sdp(True)
    # cuBLAS is deterministic only with a fixed workspace configuration, read when its first handle is made.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if a.device == "cuda":
        local = device_index()
        torch.cuda.set_device(local)
        dist.init_process_group(a.backend, device_id=torch.device("cuda", local))
    else:
        dist.init_process_group(a.backend)
    ctx = Context(a)
    ccl = Ccltune()
    if a.out and ctx.rank == 0:
        os.makedirs(a.out, exist_ok=True)
    if ctx.rank == 0:
        print(f"[train] {ctx.world} ranks, {a.backend} on {a.device}, workloads {','.join(a.workloads)}, mode "
              f"{a.mode}, ccltune {'loaded' if ccl.loaded() else 'absent'}"
              + (" (no ccltuneGetSummary)" if ccl.loaded() and ccl._summary is None else ""), flush=True)
    for name in a.workloads:
        run_phase(ctx, name, ccl, a.out)
    dist.destroy_process_group()
    if a.timeout_s > 0:
        faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    main()
