"""`rgbd_scenes`: sage_geo's paper-scale data from local files (never downloaded).

A folder (`root`, else $EXPSPEC_SAGE_DATA_DIR) holding three numpy archives in the layout of
`synthetic_scene_video`'s rows, prepared offline from the real sources:

- `anchor_data.npz`: labelled source views, arrays `x` (N, 3, H, W) in [0, 1] and `y` (N, H, W)
  depth in metres (the paper's anchor data: frames of the backbone's own labelled training sets);
- `video.npz`: mined unlabeled video clips, `frames` (M, 2, 3, H, W), `rel_pose` (M, 2, 4, 4)
  (camera 0 -> 1 and 1 -> 0, from COLMAP, metric scale) and `anchors` (M, 2, H, W) the depth of
  the COLMAP points seen in each frame (0 where none);
- `benchmark.npz`: unseen evaluation views with ground truth, `target_x`, `target_y` (7Scenes /
  TUM-RGBD test frames and their sensor depth, 0 = invalid) and `x`, `y` (held-out anchor-data views).

The conversion (7Scenes / TUM-RGBD readers, COLMAP on the video) is not part of this repository:
README.md of specs/sage_geo says what each archive holds. The camera's focal length in pixels
after resizing is the model's `focal`; frames are square (centre-cropped) with the
principal point at the centre, as the unprojection assumes. Trajectory selection is the same parallax rule as at tiny scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from components.data.base import ArrayDataModule, local_path
from components.geometry.data import parallax_scores, select_trajectories
from components.types import PositiveInt

FILES = ("anchor_data.npz", "video.npz", "benchmark.npz")


class RGBDScenes(ArrayDataModule):
    """Args:
        root: The folder of the three archives (else $EXPSPEC_SAGE_DATA_DIR).
        select_fraction: Share of the clips kept by the parallax score (1.0 keeps all).
        val_views: Benchmark views moved to the val split.
        batch_size: Rows per batch.
    """

    def __init__(self, root: str | None = None, select_fraction: float = 0.5, val_views: PositiveInt = 16,
                 batch_size: PositiveInt = 8) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if not 0 < select_fraction <= 1:
            raise ValueError(f"select_fraction must be in (0, 1], got {select_fraction}")
        self.root = local_path("rgbd_scenes", "data.root", root, "EXPSPEC_SAGE_DATA_DIR",
                               "the folder of sage_geo's prepared archives", needs=FILES,
                               how="Prepare anchor_data.npz, video.npz and benchmark.npz (specs/sage_geo/README.md)")
        self.select_fraction, self.val_views = select_fraction, val_views

    def load(self) -> dict[str, dict[str, np.ndarray]]:
        folder = Path(self.root)
        source, video, bench = (dict(np.load(folder / name)) for name in FILES)
        kept = select_trajectories(parallax_scores(video["rel_pose"], video["anchors"]), self.select_fraction)
        rows = np.resize(kept, len(source["x"]))
        train = {"x": source["x"], "y": source["y"], **{k: video[k][rows] for k in ("frames", "rel_pose", "anchors")}}
        n = min(len(bench["x"]), len(bench["target_x"]))
        bench = {k: v[:n] for k, v in bench.items()}
        return {"train": train, "val": {k: v[: self.val_views] for k, v in bench.items()},
                "test": {k: v[self.val_views:] for k, v in bench.items()}}
