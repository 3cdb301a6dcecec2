"""Geometry data: a labelled source domain and unlabeled video of a new domain (sage_geo).

`synthetic_scene_video` (tiny scale, components/geometry/scenes.py renders it): two domains of
procedural rooms. The source domain (spheres in rooms of half-size `source_room`) has ground-truth
depth: the pretraining data and the labelled "anchor data" replayed during adaptation. The target
domain (turned boxes in larger rooms, `target_room`) comes as unlabeled video clips: two frames of
a camera moving along an arc, with what structure-from-motion would give, the relative pose of the
frames and sparse "SfM" points (`anchors` pixels per frame, their depth noisy as triangulation is:
sd = `pixel_noise` x z^2 / (focal x baseline), so a clip whose camera barely moves has nearly
useless points). A share `static_fraction` of the clips are such near-static clips (baseline 0.02-0.06
against 0.3-0.7). Ground truth of the target domain exists only for its test scenes, scenes no clip
shows ("unseen").

Trajectory selection (the paper's "informative training trajectory selection") is done here, from
what SfM gives and no ground truth: each clip's parallax score is its baseline over the median depth
of its SfM points, and the `select_fraction` of clips with the highest score is kept (1.0: every clip,
the ablation). The kept clips are repeated to the source set's length, so every arm trains the same
number of rows and steps.

Rows (one dict of tensors per batch): train: `x` (3, H, W) a source image, `y` (H, W) its depth,
`frames` (2, 3, H, W) a target clip, `rel_pose` (2, 4, 4) camera 0 -> 1 and 1 -> 0, `anchors`
(2, H, W) SfM depth at the anchor pixels, 0 elsewhere. val/test: `x`, `y` source views and
`target_x`, `target_y` target views of unseen scenes, with ground-truth depth.
"""

from __future__ import annotations

import numpy as np

from components.data.base import ArrayDataModule
from components.geometry.scenes import arc_pose, random_scene, relative_pose, render
from components.types import NonNegativeInt, PositiveFloat, PositiveInt, ProperFraction


def parallax_scores(rel_pose: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """Per clip: camera baseline / median depth of its SfM points (frame 0), from SfM output only."""
    baseline = np.linalg.norm(rel_pose[:, 0, :3, 3], axis=1)
    depth = np.array([np.median(a[a > 0]) for a in anchors[:, 0]])
    return baseline / depth


def select_trajectories(scores: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the ceil(fraction x n) clips of highest score, in their original order."""
    keep = max(1, int(np.ceil(fraction * len(scores))))
    return np.sort(np.argsort(-scores, kind="stable")[:keep])


class SyntheticSceneVideo(ArrayDataModule):
    """Source views with depth, target video clips with SfM output (module docstring).

    Args:
        seed: Draws every scene, camera and noise (one stream per part).
        size: Image side in pixels.
        focal: Focal length in pixels.
        source_views: Labelled source training views (also the train split's length).
        target_clips: Unlabeled target clips (before selection).
        eval_views: Views per domain in val and in test (val 1/4 of it).
        source_room: Half-size of the source rooms (spheres).
        target_room: Half-size of the target rooms (boxes).
        anchors: SfM points per frame.
        pixel_noise: Image noise of a matched point in pixels (sets the triangulation noise).
        static_fraction: Share of near-static clips.
        select_fraction: Share of the clips kept by the parallax score (1.0 keeps all).
        batch_size: Rows per batch.
    """

    def __init__(self, seed: NonNegativeInt = 0, size: PositiveInt = 24, focal: PositiveFloat = 22.0,
                 source_views: PositiveInt = 256, target_clips: PositiveInt = 256, eval_views: PositiveInt = 64,
                 source_room: PositiveFloat = 3.5, target_room: PositiveFloat = 5.0, anchors: PositiveInt = 24,
                 pixel_noise: PositiveFloat = 0.3, static_fraction: ProperFraction = 0.5,
                 select_fraction: float = 0.5, batch_size: PositiveInt = 32) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if not 0 < select_fraction <= 1:
            raise ValueError(f"select_fraction must be in (0, 1], got {select_fraction}")
        self.seed, self.size, self.focal = seed, size, focal
        self.source_views, self.target_clips, self.eval_views = source_views, target_clips, eval_views
        self.source_room, self.target_room, self.anchors = source_room, target_room, anchors
        self.pixel_noise, self.static_fraction, self.select_fraction = pixel_noise, static_fraction, select_fraction

    def views(self, rng: np.random.Generator, shape: str, room: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        """n views, each of a new scene from a random place on the arc: (images, depths)."""
        out = [render(random_scene(rng, shape, room), self.random_pose(rng), self.size, self.focal) for _ in range(n)]
        return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])

    @staticmethod
    def random_pose(rng: np.random.Generator, azimuth: float | None = None) -> np.ndarray:
        azimuth = rng.uniform(0, 2 * np.pi) if azimuth is None else azimuth
        return arc_pose(rng.uniform(2.3, 3.0), rng.uniform(1.0, 1.7), azimuth)

    def clip(self, rng: np.random.Generator, static: bool) -> dict[str, np.ndarray]:
        """Two frames of one target scene, the camera moved along its arc by the clip's baseline."""
        scene = random_scene(rng, "box", self.target_room)
        radius, height, start = rng.uniform(2.3, 3.0), rng.uniform(1.0, 1.7), rng.uniform(0, 2 * np.pi)
        baseline = rng.uniform(0.02, 0.06) if static else rng.uniform(0.3, 0.7)
        poses = [arc_pose(radius, height, start), arc_pose(radius, height, start + baseline / radius)]
        frames, depths = zip(*(render(scene, p, self.size, self.focal) for p in poses))
        anchors = np.zeros((2, self.size, self.size), np.float32)
        for k, depth in enumerate(depths):
            pixels = rng.choice(self.size * self.size, self.anchors, replace=False)
            z = depth.reshape(-1)[pixels]
            noisy = z + rng.normal(0, 1, len(z)) * self.pixel_noise * z ** 2 / (self.focal * baseline)
            anchors[k].reshape(-1)[pixels] = np.clip(noisy, 0.2, 6 * self.target_room)
        rel = np.stack([relative_pose(poses[0], poses[1]), relative_pose(poses[1], poses[0])]).astype(np.float32)
        return {"frames": np.stack(frames), "rel_pose": rel, "anchors": anchors}

    def load(self) -> dict[str, dict[str, np.ndarray]]:
        source_rng, clip_rng, eval_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(3))
        x, y = self.views(source_rng, "sphere", self.source_room, self.source_views)
        static = clip_rng.permutation(self.target_clips) < round(self.static_fraction * self.target_clips)
        clips = [self.clip(clip_rng, bool(s)) for s in static]
        video = {k: np.stack([c[k] for c in clips]) for k in clips[0]}
        kept = select_trajectories(parallax_scores(video["rel_pose"], video["anchors"]), self.select_fraction)
        rows = np.resize(kept, self.source_views)  # the kept clips repeated to the source set's length
        train = {"x": x, "y": y, **{k: v[rows] for k, v in video.items()}}
        self.kept_static_share = float(static[kept].mean())
        splits = {"train": train}
        for split, n in (("val", max(1, self.eval_views // 4)), ("test", self.eval_views)):
            sx, sy = self.views(eval_rng, "sphere", self.source_room, n)
            tx, ty = self.views(eval_rng, "box", self.target_room, n)
            splits[split] = {"x": sx, "y": sy, "target_x": tx, "target_y": ty}
        return splits
