"""The model zoo: small plain-PyTorch models shared by tests, the book, benchmarks and assignments.

Every entry is a :class:`ZooEntry` with a constructor, deterministic ``example_inputs()`` and a
``loss(model, *inputs)`` used for training steps. ``ZOO`` maps names to entries; ``make(name)``
builds a freshly seeded model and its inputs.
"""
import dataclasses
import math
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Linear → GELU → Linear → ReLU → Linear."""

    def __init__(self, d_in=32, d_hidden=64, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.fc3 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class SmallCNN(nn.Module):
    """Two conv → batchnorm → relu → maxpool stages, then a linear classifier."""

    def __init__(self, channels=3, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(16 * 4 * 4, n_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        return self.head(torch.flatten(x, 1))


class NormActBlock(nn.Module):
    """LayerNorm → Linear → GELU → softmax-gated residual: the memory-bound ops in one block."""

    def __init__(self, dim=64):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.norm(x)
        h = F.gelu(self.proj(h), approximate="tanh")
        gate = torch.softmax(self.gate(x), dim=-1)
        return x + h * gate


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention written with matmuls, as in nanoGPT (no fused kernel)."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", mask)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTMLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """A nanoGPT transformer block: pre-norm attention and MLP, each with a residual."""

    def __init__(self, n_embd=64, n_head=4, block_size=32):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = GPTMLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyGPT(nn.Module):
    """A 2-layer GPT: token and position embeddings, blocks, final norm, tied LM head."""

    def __init__(self, vocab_size=96, n_embd=64, n_head=4, n_layer=2, block_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)

    def forward(self, idx, targets):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


@dataclasses.dataclass
class ZooEntry:
    """One zoo model: how to build it, its example inputs, and its training loss."""

    name: str
    build: Callable[[], nn.Module]
    example_inputs: Callable[[], tuple]
    loss: Callable  # loss(output) -> scalar tensor


def _generator(seed):
    return torch.Generator().manual_seed(seed)


def _mlp_inputs():
    return (torch.randn(16, 32, generator=_generator(1)),)


def _cnn_inputs():
    return (torch.randn(4, 3, 16, 16, generator=_generator(2)),)


def _norm_inputs():
    return (torch.randn(4, 16, 64, generator=_generator(3)),)


def _block_inputs():
    return (torch.randn(2, 32, 64, generator=_generator(4)),)


def _gpt_inputs():
    g = _generator(5)
    idx = torch.randint(0, 96, (2, 32), generator=g)
    targets = torch.randint(0, 96, (2, 32), generator=g)
    return (idx, targets)


def _sum_of_squares(out):
    return (out.float() ** 2).mean()


def _gpt_loss(out):
    return out[1]


ZOO = {
    entry.name: entry
    for entry in (
        ZooEntry("mlp", MLP, _mlp_inputs, _sum_of_squares),
        ZooEntry("cnn", SmallCNN, _cnn_inputs, _sum_of_squares),
        ZooEntry("norm_act", NormActBlock, _norm_inputs, _sum_of_squares),
        ZooEntry("gpt_block", Block, _block_inputs, _sum_of_squares),
        ZooEntry("tiny_gpt", TinyGPT, _gpt_inputs, _gpt_loss),
    )
}


def make(name, seed=0):
    """Build zoo model ``name`` with parameters seeded by ``seed``; return (model, inputs)."""
    entry = ZOO[name]
    torch.manual_seed(seed)
    return entry.build(), entry.example_inputs()


def training_step(model, inputs, loss_fn, optimizer=None):
    """One forward/backward (and optimizer step if given); returns the loss, detached."""
    out = model(*inputs)
    loss = loss_fn(out)
    loss.backward()
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad()
    return loss.detach()
