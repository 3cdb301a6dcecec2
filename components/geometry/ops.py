"""Pointmap geometry in torch: unprojection, Chamfer distance, sparse-anchor and dense
multi-view-consistency losses (sage_geo's supervision at tiny scale).

Pinhole camera with focal `focal` pixels and the principal point at the image centre; camera
frame x right, y down, z forward; `rel_pose` maps camera-i coordinates into camera-j coordinates.

Chamfer distance: written with `torch.cdist` (a few lines) rather than taken from pytorch3d or
kaolin, which need compiled extensions built against a torch version (not installable on this
CPU torch without changing it); the clouds here are one image's points (<= a few thousand), where
the dense pairwise distance matrix is cheap. Convention: the mean over both clouds of each point's
Euclidean distance to its nearest neighbour in the other cloud, halved (the symmetric mean of the
two one-way distances, as 3D-reconstruction benchmarks report it, in scene units).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pixel_rays(size: int, focal: float, device: torch.device | None = None) -> torch.Tensor:
    """(size, size, 3) camera-frame rays with z = 1: a pixel's point is depth x ray."""
    centre = (size - 1) / 2
    v, u = torch.meshgrid(torch.arange(size, device=device), torch.arange(size, device=device), indexing="ij")
    return torch.stack([(u - centre) / focal, (v - centre) / focal, torch.ones(size, size, device=device)], -1)


def unproject(depth: torch.Tensor, focal: float) -> torch.Tensor:
    """(B, H, W) depth -> (B, H, W, 3) camera-frame pointmap."""
    return depth[..., None] * pixel_rays(depth.shape[-1], focal, depth.device)


def chamfer_distance(a: torch.Tensor, b: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """(B, N, 3), (B, N, 3) -> (B,): symmetric mean nearest-neighbour distance (module docstring).
    `valid` (B, N), for pixel-aligned clouds: only those pixels' points of both clouds count (sensor
    depth 0 = no measurement)."""
    d = torch.cdist(a, b)
    if valid is None:
        return 0.5 * (d.min(2).values.mean(1) + d.min(1).values.mean(1))
    pair = valid[:, :, None] & valid[:, None, :]
    d = d.masked_fill(~pair, float("inf"))
    count = valid.sum(1).clamp(min=1)
    a_to_b = d.min(2).values.nan_to_num(posinf=0.0).mul(valid).sum(1) / count
    b_to_a = d.min(1).values.nan_to_num(posinf=0.0).mul(valid).sum(1) / count
    return 0.5 * (a_to_b + b_to_a)


def anchor_loss(depth: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    """Sparse geometric anchoring: mean |predicted - SfM depth| over the anchor pixels (anchors > 0)."""
    mask = anchors > 0
    return (depth - anchors).abs()[mask].sum() / mask.sum().clamp(min=1)


def reprojection_loss(depth_i: torch.Tensor, depth_j: torch.Tensor, image_i: torch.Tensor, image_j: torch.Tensor,
                      rel_pose: torch.Tensor, focal: float) -> torch.Tensor:
    """Dense multi-view consistency of view i against view j: every pixel of i is lifted with its
    predicted depth, moved into camera j by `rel_pose` (B, 4, 4) and projected; where it lands inside
    j, the photometric error |I_i - I_j(p)| (mean over channels) plus the geometric error
    |z_in_j - D_j(p)| / (z_in_j + D_j(p)) (bilinear samples of j's image and predicted depth),
    averaged over the pixels that land inside. Differentiable in both depth maps."""
    b, h, w = depth_i.shape
    points = unproject(depth_i, focal).reshape(b, -1, 3)
    moved = points @ rel_pose[:, :3, :3].transpose(1, 2) + rel_pose[:, None, :3, 3]
    z = moved[..., 2].clamp(min=1e-3)
    centre = (w - 1) / 2
    u, v = focal * moved[..., 0] / z + centre, focal * moved[..., 1] / z + centre
    grid = torch.stack([2 * u / (w - 1) - 1, 2 * v / (h - 1) - 1], -1).reshape(b, h, w, 2)
    inside = ((grid.abs() <= 1).all(-1) & (moved[..., 2].reshape(b, h, w) > 1e-2)).float()
    sampled_image = F.grid_sample(image_j, grid, align_corners=True)
    sampled_depth = F.grid_sample(depth_j[:, None], grid, align_corners=True)[:, 0]
    z = z.reshape(b, h, w)
    photometric = (image_i - sampled_image).abs().mean(1)
    geometric = (z - sampled_depth).abs() / (z + sampled_depth).clamp(min=1e-3)
    return ((photometric + geometric) * inside).sum() / inside.sum().clamp(min=1)
