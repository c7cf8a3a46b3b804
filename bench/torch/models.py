"""Models of the PyTorch workloads (bench/torch/train.py), plain PyTorch:

- GPT: a GPT-2 style decoder (pre-LayerNorm blocks, causal attention, tied embedding), used by DDP and FSDP2.
- TPGPT: the same kind of decoder with Megatron-style tensor parallelism over a process group: column-parallel QKV
  and MLP-in, row-parallel attention-out and MLP-out, a vocab-parallel embedding and a vocab-parallel
  cross-entropy. Mode "allreduce": activations replicated, one all-reduce after each row-parallel layer in forward
  and one before each column-parallel layer in backward. Mode "sp" (sequence parallel): activations sharded along
  the sequence, all-gather before and reduce-scatter after each parallel region (the reverse in backward), and a
  coalesced all-reduce of the replicated LayerNorm gradients.
TP activations are sequence-first, [S, B, H], so that sequence shards are contiguous for all-gather/reduce-scatter.
"""
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab: int = 32768
    d: int = 1024
    heads: int = 16
    layers: int = 24
    seq: int = 1024

    def params(self):
        """Parameter count (tied embedding, LayerNorms and biases included)."""
        d = self.d
        block = 12 * d * d + 13 * d
        return self.vocab * d + self.seq * d + self.layers * block + 2 * d


def _init_weights(module, std=0.02):
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


def _attention(q, k, v):
    """Causal attention of [B, heads, S, hd] tensors."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.d
        self.heads = cfg.heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        y = _attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d)
        self.pos = nn.Embedding(cfg.seq, cfg.d)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d)
        _init_weights(self)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos.weight[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.ln_f(x), self.tok.weight)  # tied head
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


# ---------------------------------------------------------------------------------------------------------------
# Megatron-style tensor parallelism


def _identity(x, group):
    return x


def _all_reduce(x, group):
    x = x.contiguous()
    dist.all_reduce(x, group=group)
    return x


def _all_gather_seq(x, group):
    world = dist.get_world_size(group)
    out = torch.empty((x.shape[0] * world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out


def _reduce_scatter_seq(x, group):
    world = dist.get_world_size(group)
    out = torch.empty((x.shape[0] // world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(out, x.contiguous(), group=group)
    return out


def _conjugate(name, forward, backward):
    """An autograd function that applies forward(x, group) and, to the gradient, backward(g, group)."""

    def fwd(ctx, x, group):
        ctx.group = group
        return forward(x, group)

    def bwd(ctx, g):
        return backward(g, ctx.group), None

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})


# Megatron's f and g, and their sequence-parallel counterparts.
_CopyToTP = _conjugate("_CopyToTP", _identity, _all_reduce)  # before a column-parallel layer
_ReduceFromTP = _conjugate("_ReduceFromTP", _all_reduce, _identity)  # after a row-parallel layer
_GatherFromSP = _conjugate("_GatherFromSP", _all_gather_seq, _reduce_scatter_seq)  # sp, before column-parallel
_ScatterToSP = _conjugate("_ScatterToSP", _reduce_scatter_seq, _all_gather_seq)  # sp, after row-parallel


class _VocabParallelCE(torch.autograd.Function):
    """Cross-entropy over logits sharded along the vocabulary (Megatron's vocab-parallel cross-entropy): an
    all-reduce MAX of the row maxima and one all-reduce SUM of the target logit and the exp-sum; no communication
    backward. Returns the per-token loss (fp32)."""

    @staticmethod
    def forward(ctx, logits, target, group, vocab_start):
        ctx.in_dtype = logits.dtype
        logits = logits.float()
        vl = logits.shape[-1]
        lmax = logits.max(dim=-1)[0]
        dist.all_reduce(lmax, op=dist.ReduceOp.MAX, group=group)
        logits = logits - lmax.unsqueeze(-1)
        outside = (target < vocab_start) | (target >= vocab_start + vl)
        local_t = (target - vocab_start).masked_fill(outside, 0)
        picked = logits.gather(-1, local_t.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        exp = logits.exp()
        both = torch.stack([picked, exp.sum(dim=-1)])
        dist.all_reduce(both, group=group)
        loss = torch.log(both[1]) - both[0]
        exp.div_(both[1].unsqueeze(-1))
        ctx.save_for_backward(exp, outside, local_t)
        return loss

    @staticmethod
    def backward(ctx, g):
        softmax, outside, local_t = ctx.saved_tensors
        # softmax - one_hot(target), the one-hot part only on the rank that holds the target. A comparison with
        # an arange instead of a scatter: no indexing kernel, the same bits every run, fine under graph capture.
        vl = softmax.shape[-1]
        hit = torch.arange(vl, device=softmax.device) == local_t.unsqueeze(-1)
        grad = softmax.sub_((hit & (~outside).unsqueeze(-1)).to(softmax.dtype))
        grad.mul_(g.unsqueeze(-1))
        return grad.to(ctx.in_dtype), None, None, None


@dataclass
class TPConfig:
    vocab: int = 32768
    d: int = 4096
    heads: int = 32
    layers: int = 8
    seq: int = 2048
    mode: str = "allreduce"  # or "sp"


class TPBlock(nn.Module):
    def __init__(self, cfg, tp, group, dtype):
        super().__init__()
        d = cfg.d
        self.group, self.sp = group, cfg.mode == "sp"
        self.hl = cfg.heads // tp  # local heads
        self.hd = d // cfg.heads
        self.ln1 = nn.LayerNorm(d, dtype=dtype)
        self.qkv = nn.Linear(d, 3 * self.hl * self.hd, bias=False, dtype=dtype)  # column parallel
        self.proj = nn.Linear(self.hl * self.hd, d, bias=False, dtype=dtype)  # row parallel
        self.ln2 = nn.LayerNorm(d, dtype=dtype)
        self.fc1 = nn.Linear(d, 4 * d // tp, bias=False, dtype=dtype)  # column parallel
        self.fc2 = nn.Linear(4 * d // tp, d, bias=False, dtype=dtype)  # row parallel

    def _enter(self, x):
        return _GatherFromSP.apply(x, self.group) if self.sp else _CopyToTP.apply(x, self.group)

    def _leave(self, x):
        return _ScatterToSP.apply(x, self.group) if self.sp else _ReduceFromTP.apply(x, self.group)

    def forward(self, x):
        h = self._enter(self.ln1(x))
        s, b, _ = h.shape
        q, k, v = self.qkv(h).view(s, b, 3, self.hl, self.hd).permute(2, 1, 3, 0, 4)
        y = _attention(q, k, v).permute(2, 0, 1, 3).reshape(s, b, self.hl * self.hd)
        x = x + self._leave(self.proj(y))
        h = self._enter(self.ln2(x))
        return x + self._leave(self.fc2(F.gelu(self.fc1(h), approximate="tanh")))


class TPGPT(nn.Module):
    """Tensor-parallel decoder over `group` (TP degree = its size). Parameters are created directly as this rank's
    shards from the RNG state at construction; seed it per rank for a deterministic model."""

    def __init__(self, cfg, group, dtype):
        super().__init__()
        tp = dist.get_world_size(group)
        rank = dist.get_rank(group)
        for what, n in (("heads", cfg.heads), ("vocab", cfg.vocab), ("4*d", 4 * cfg.d)):
            if n % tp:
                raise ValueError(f"tensor parallel: {what}={n} is not divisible by the TP degree {tp}")
        if cfg.mode not in ("allreduce", "sp"):
            raise ValueError(f"tensor parallel: unknown mode {cfg.mode!r} (allreduce or sp)")
        self.cfg, self.group, self.sp = cfg, group, cfg.mode == "sp"
        self.vl = cfg.vocab // tp
        self.vocab_start = rank * self.vl
        self.emb = nn.Embedding(self.vl, cfg.d, dtype=dtype)  # vocab parallel
        self.blocks = nn.ModuleList(TPBlock(cfg, tp, group, dtype) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d, dtype=dtype)
        self.head = nn.Linear(cfg.d, self.vl, bias=False, dtype=dtype)  # vocab (column) parallel
        _init_weights(self)

    def replicated_params(self):
        """Parameters every rank holds whole (LayerNorms); in sp mode their gradients need an all-reduce."""
        return [p for n, p in self.named_parameters() if ".ln" in n or n.startswith("ln")]

    def forward(self, idx, targets):
        """idx, targets: [S, B] token ids (the same on every rank of the group). Returns the mean loss."""
        outside = (idx < self.vocab_start) | (idx >= self.vocab_start + self.vl)
        x = self.emb((idx - self.vocab_start).masked_fill(outside, 0)) * (~outside).unsqueeze(-1).to(self.emb.weight)
        x = _ScatterToSP.apply(x, self.group) if self.sp else _ReduceFromTP.apply(x, self.group)
        for blk in self.blocks:
            x = blk(x)
        h = self.ln_f(x)
        h = _GatherFromSP.apply(h, self.group) if self.sp else _CopyToTP.apply(h, self.group)
        loss = _VocabParallelCE.apply(self.head(h), targets, self.group, self.vocab_start)
        return loss.mean()

    def sync_replicated_grads(self):
        """sp mode: sum the LayerNorm gradients over the group (each rank saw a sequence shard), one coalesced
        all-reduce."""
        if not self.sp:
            return
        grads = [p.grad for p in self.replicated_params() if p.grad is not None]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=self.group)
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view_as(g))
            off += g.numel()


def tp_comm_volume(cfg, tokens, elem_bytes):
    """Communication of one TP training step, as a list of (collective, bytes per call, calls)."""
    act = tokens * cfg.d * elem_bytes
    if cfg.mode == "sp":
        # Per block 2 all-gathers and 2 reduce-scatters forward and backward each; embedding RS, head AG.
        ag = ("allgather(out)", act, 4 * cfg.layers + 2)
        rs = ("reducescatter(in)", act, 4 * cfg.layers + 2)
        ln = 2 * 2 * cfg.d * cfg.layers + 2 * cfg.d
        return [ag, rs, ("allreduce (layernorm grads)", ln * elem_bytes, 1),
                ("allreduce fp32 (CE max)", tokens * 4, 1), ("allreduce fp32 (CE sums)", 2 * tokens * 4, 1)]
    return [("allreduce (activations)", act, 4 * cfg.layers + 2),
            ("allreduce fp32 (CE max)", tokens * 4, 1), ("allreduce fp32 (CE sums)", 2 * tokens * 4, 1)]


def tp_params_per_rank(cfg, tp):
    d = cfg.d
    return cfg.layers * (12 * d * d // tp + 4 * d) + 2 * (cfg.vocab // tp) * d + 2 * d


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return str(n)
