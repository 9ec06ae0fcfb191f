"""A small PyTorch/XLA training loop (torch_xla on the CPU: PJRT_DEVICE=CPU),
for `oomscope run`'s PyTorch/XLA path: its graphs are compiled by XLA, whose
dumps the hook asks for, and its memory info is sampled where the device
has any."""

import os
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
w = torch.randn(512, 512, device=device, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.01)
for step in range(4):
    x = torch.randn(64, 512, device=device)
    loss = (x @ w).relu().sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    xm.mark_step()
    time.sleep(0.3)
print("trained", step + 1, "steps")
