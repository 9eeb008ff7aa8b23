"""SmallNet: two conv layers and a linear head, written for CUDA.

The docstring mentions cuda and cudnn on purpose: a migration must leave it alone.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallNet(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.head = nn.Linear(16 * 7 * 7, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            print(f"note: SmallNet is running on {x.device.type}, not on an accelerator")
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def make_model(num_classes: int = 10) -> SmallNet:
    model = SmallNet(num_classes)
    return model.cuda()
