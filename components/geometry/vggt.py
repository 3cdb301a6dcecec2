"""`vggt_pointmap`: VGGT (Wang et al., CVPR 2025) as sage_geo's paper-scale geometry backbone.

The `vggt` package (facebookresearch/vggt, installed from its repository: it is not on PyPI) supplies the network; its weights come
from a local file (`weights`, else $EXPSPEC_VGGT_WEIGHTS: the released `model.pt` state dict), never
downloaded. Each frame is run as a one-frame sequence; the depth head's output, unprojected along
the known camera rays (`focal`), is the pointmap, so the task's losses and Chamfer distance are
the same as at tiny scale. MV-DUSt3R would be a second wrapper of the same shape.
"""

from __future__ import annotations

import torch
from torch import nn

from components.geometry.ops import unproject
from components.local_assets import local_path
from components.types import PositiveFloat


class VGGTPointmap(nn.Module):
    """Args:
        focal: Focal length in pixels of the (resized) frames.
        weights: The VGGT state-dict file (else $EXPSPEC_VGGT_WEIGHTS).
    """

    def __init__(self, focal: PositiveFloat, weights: str | None = None) -> None:
        super().__init__()
        path = local_path("vggt_pointmap", "model.weights", weights, "EXPSPEC_VGGT_WEIGHTS",
                          "the VGGT weights (model.pt)", how="Download VGGT-1B's model.pt once")
        try:
            from vggt.models.vggt import VGGT
        except ImportError as error:  # not on PyPI, so no extra can bring it (framework/extras.py)
            raise ImportError("vggt_pointmap needs the `vggt` package, which is not on PyPI: install it from "
                              "https://github.com/facebookresearch/vggt with `pip install --no-deps -e .` "
                              "(its requirements pin an older torch; keep this one)") from error

        self.focal = focal
        self.net = VGGT()
        self.net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))

    def depth(self, image: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> (B, H, W) depth from VGGT's depth head, one frame at a time."""
        out = self.net(image[:, None])
        return out["depth"][:, 0, ..., 0]

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return unproject(self.depth(image), self.focal)
