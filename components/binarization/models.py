"""Binary neural networks for StoMPP (NeurIPS 2026; see specs/stompp/README.md): a binary MLP for
the tiny digits study and binary ResNet-18/34/50 for the paper-scale CIFAR/ImageNet specs.

Every binarized weight and activation is a `BinarizationSite` (components/binarization/binarize.py) whose
`policy` says how it is binarized: `ste` (vanilla STE, binary from the start), `stompp` /
`stompp_ste` (masks driven by the `progressive_binarization` callback), `fp` (never binarized).
As is usual for BNNs, the first layer's input (the image), the stem convolution and the classifier
head stay real-valued; BatchNorm layers are real.

`binary_layers()` lists the sites grouped into layers, input side first: the order the callback's
`forward` progression follows (and `reverse` reverses).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.binarization.binarize import (BinarizationSite, BinaryActivation, BinaryConv2d, BinaryLinear, Policy,
                                     check_policy)
from components.types import PositiveInt


class BinaryMLP(nn.Module):
    """`depth` binary blocks Linear(binary weights) -> BatchNorm -> binary activation, then a real
    Linear head: the tiny model of StoMPP's depth/ordering study (paper's MLP ablation).

    Layer l of the progression is block l: its weight site and its output-activation site (the
    binary input of block l + 1, or of the head).

    Args:
        in_features: Width of the input rows (64 for 8x8 digits).
        out_features: Number of classes.
        depth: Number of binary blocks, >= 1.
        width: Units per binary block.
        policy: ste | stompp | stompp_ste | fp (see components/binarization/binarize.py).
    """

    def __init__(self, in_features: PositiveInt, out_features: PositiveInt, depth: PositiveInt = 8,
                 width: PositiveInt = 128, policy: Policy = "stompp") -> None:
        super().__init__()
        check_policy(policy)
        self.blocks = nn.ModuleList()
        fan_in = in_features
        for _ in range(depth):
            self.blocks.append(nn.ModuleDict({
                "linear": BinaryLinear(fan_in, width, policy=policy),
                "norm": nn.BatchNorm1d(width),
                "act": BinaryActivation(width, policy=policy),
            }))
            fan_in = width
        self.head = nn.Linear(width, out_features)
        self.in_features, self.out_features, self.policy = in_features, out_features, policy

    def binary_layers(self) -> list[list[BinarizationSite]]:
        return [[block["linear"].site, block["act"].site] for block in self.blocks]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (N, in_features) to (N, out_features) logits."""
        for block in self.blocks:
            x = block["act"](block["norm"](block["linear"](x)))
        return self.head(x)


class _BinaryConvUnit(nn.Module):
    """binary activation -> binary conv -> BatchNorm: one layer of the progression."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, policy: Policy) -> None:
        super().__init__()
        self.act = BinaryActivation(cin, policy=policy, conv=True)
        self.conv = BinaryConv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, policy=policy)
        self.norm = nn.BatchNorm2d(cout)

    def sites(self) -> list[BinarizationSite]:
        return [self.act.site, self.conv.site]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(self.act(x)))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    """Real-valued shortcut: identity, or average pool + 1x1 conv + BN when the shape changes."""
    if stride == 1 and cin == cout:
        return nn.Identity()
    pool = nn.AvgPool2d(stride, ceil_mode=True, count_include_pad=False) if stride > 1 else nn.Identity()
    return nn.Sequential(pool, nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))


class _BasicBlock(nn.Module):
    """Two binary 3x3 units, each with its own real-valued residual (Bi-Real style), for ResNet-18/34."""

    expansion = 1

    def __init__(self, cin: int, width: int, stride: int, policy: Policy) -> None:
        super().__init__()
        self.unit1 = _BinaryConvUnit(cin, width, 3, stride, policy)
        self.unit2 = _BinaryConvUnit(width, width, 3, 1, policy)
        self.shortcut = _shortcut(cin, width, stride)

    def units(self) -> list[_BinaryConvUnit]:
        return [self.unit1, self.unit2]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.unit1(x) + self.shortcut(x)
        return self.unit2(h) + h


class _Bottleneck(nn.Module):
    """Binary 1x1 -> 3x3 -> 1x1 units with one real-valued residual, for ResNet-50."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int, policy: Policy) -> None:
        super().__init__()
        cout = width * self.expansion
        self.unit1 = _BinaryConvUnit(cin, width, 1, 1, policy)
        self.unit2 = _BinaryConvUnit(width, width, 3, stride, policy)
        self.unit3 = _BinaryConvUnit(width, cout, 1, 1, policy)
        self.shortcut = _shortcut(cin, cout, stride)

    def units(self) -> list[_BinaryConvUnit]:
        return [self.unit1, self.unit2, self.unit3]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.unit3(self.unit2(self.unit1(x))) + self.shortcut(x)


RESNETS: dict[int, tuple[type[nn.Module], tuple[int, int, int, int]]] = {
    18: (_BasicBlock, (2, 2, 2, 2)),
    34: (_BasicBlock, (3, 4, 6, 3)),
    50: (_Bottleneck, (3, 4, 6, 3)),
}


class BinaryResNet(nn.Module):
    """Binary ResNet-18/34/50 (He et al. 2016 layouts) with binary weights and activations in every
    residual-block convolution; real stem, shortcuts, BatchNorm and head (StoMPP's paper-scale
    models). Written here because torchvision is not installable alongside this torch.

    Args:
        depth: 18, 34 or 50.
        in_channels: Image channels.
        out_features: Number of classes.
        stem: "cifar" (3x3 conv, stride 1, no pooling; 32x32 inputs) or "imagenet" (7x7 conv,
            stride 2, then 3x3 max-pool; 224x224 inputs).
        width: Channels of the first stage (64 in the paper's ResNets); doubled at each stage.
        policy: ste | stompp | stompp_ste | fp (see components/binarization/binarize.py).
    """

    def __init__(self, depth: Literal[18, 34, 50], in_channels: PositiveInt, out_features: PositiveInt,
                 stem: Literal["cifar", "imagenet"] = "cifar", width: PositiveInt = 64,
                 policy: Policy = "stompp") -> None:
        super().__init__()
        if depth not in RESNETS:
            raise ValueError(f"depth must be one of {sorted(RESNETS)}, got {depth}")
        if stem not in ("cifar", "imagenet"):
            raise ValueError(f"stem must be 'cifar' or 'imagenet', got '{stem}'")
        check_policy(policy)
        block, counts = RESNETS[depth]
        if stem == "cifar":
            self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width))
        else:
            self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False),
                                      nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1))
        blocks: list[nn.Module] = []
        cin = width
        for stage, count in enumerate(counts):
            for i in range(count):
                stride = 2 if stage > 0 and i == 0 else 1
                blocks.append(block(cin, width * 2**stage, stride, policy))
                cin = width * 2**stage * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, out_features)
        self.in_channels, self.out_features, self.policy = in_channels, out_features, policy

    def binary_layers(self) -> list[list[BinarizationSite]]:
        return [unit.sites() for block in self.blocks for unit in block.units()]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (N, in_channels, H, W) to (N, out_features) logits."""
        if x.ndim != 4:
            raise ValueError(f"BinaryResNet expects input of shape (N, C, H, W), got {tuple(x.shape)}")
        x = self.blocks(self.stem(x))
        return self.head(torch.relu(x).mean(dim=(2, 3)))
