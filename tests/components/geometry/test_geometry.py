"""The geometry family (components/geometry/): the ray caster's depth, the Chamfer distance, the
consistency and anchor losses, trajectory selection, the task's steps, and the paper-scale pieces
failing early without their local files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.geometry.data import SyntheticSceneVideo, parallax_scores, select_trajectories
from components.geometry.model import PointmapCNN
from components.geometry.ops import anchor_loss, chamfer_distance, reprojection_loss, unproject
from components.geometry.scenes import Scene, arc_pose, look_at, random_scene, relative_pose, render
from components.geometry.task import GeometryAdaptation


def _sphere_scene() -> Scene:
    return Scene(room=5.0, height=2.5, shape="sphere", centers=np.array([[0.0, 0.5, 0.0]]), sizes=np.array([0.5]),
                 angles=np.zeros(1), colors=np.array([[0.9, 0.1, 0.1]]))


def test_depth_of_a_sphere_seen_head_on() -> None:
    """A camera 3 units from a radius-0.5 sphere's centre sees its surface at depth 2.5 in the middle."""
    pose = look_at(np.array([0.0, 0.5, 3.0]), np.array([0.0, 0.5, 0.0]))
    image, depth = render(_sphere_scene(), pose, 25, 22.0)
    assert depth[12, 12] == pytest.approx(2.5, abs=1e-4)
    assert image.shape == (3, 25, 25) and 0 <= image.min() and image.max() <= 1
    assert depth[0, 0] > 2.5  # the room behind it


def test_boxes_and_rooms_give_finite_depths() -> None:
    scene = random_scene(np.random.default_rng(0), "box", 5.0)
    _, depth = render(scene, arc_pose(2.5, 1.3, 0.4), 24, 22.0)
    assert np.isfinite(depth).all() and depth.min() > 0


def test_chamfer_is_zero_on_itself_symmetric_and_masks_pixels() -> None:
    a, b = torch.randn(2, 40, 3), torch.randn(2, 40, 3)
    assert torch.allclose(chamfer_distance(a, a), torch.zeros(2), atol=1e-3)  # cdist's matmul form
    assert torch.allclose(chamfer_distance(a, b), chamfer_distance(b, a))
    valid = torch.ones(2, 40, dtype=torch.bool)
    valid[:, :7] = False
    assert torch.allclose(chamfer_distance(a, b, valid), chamfer_distance(a[:, 7:], b[:, 7:]))


def test_reprojection_loss_is_lowest_at_the_true_depth() -> None:
    """The dense consistency term, fed the true depths of two views and their relative pose, is
    lower than with depths scaled by 0.8 or 1.2: it carries metric depth."""
    scene = random_scene(np.random.default_rng(1), "box", 5.0)
    p0, p1 = arc_pose(2.6, 1.3, 0.5), arc_pose(2.6, 1.3, 0.5 + 0.5 / 2.6)
    (i0, d0), (i1, d1) = render(scene, p0, 24, 22.0), render(scene, p1, 24, 22.0)
    rel = torch.tensor(relative_pose(p0, p1), dtype=torch.float32)[None]
    i0, i1, d0, d1 = (torch.tensor(a)[None] for a in (i0, i1, d0, d1))
    losses = {s: reprojection_loss(d0 * s, d1 * s, i0, i1, rel, 22.0).item() for s in (0.8, 1.0, 1.2)}
    assert losses[1.0] < losses[0.8] and losses[1.0] < losses[1.2]


def test_anchor_loss_reads_only_the_anchor_pixels() -> None:
    depth = torch.full((1, 4, 4), 2.0)
    anchors = torch.zeros(1, 4, 4)
    anchors[0, 1, 2] = 3.0
    assert anchor_loss(depth, anchors).item() == pytest.approx(1.0)


def test_selection_keeps_the_informative_clips() -> None:
    """Near-static clips have a low parallax score, and selecting half drops nearly all of them."""
    data = SyntheticSceneVideo(seed=0, source_views=32, target_clips=32, eval_views=8, select_fraction=0.5)
    data.setup()
    assert data.kept_static_share < 0.1
    assert list(select_trajectories(np.array([0.1, 0.5, 0.3, 0.9]), 0.5)) == [1, 3]
    train = data.split("train")
    assert train["frames"].shape == (32, 2, 3, 24, 24) and train["x"].shape == (32, 3, 24, 24)
    assert (train["anchors"] > 0).sum(dim=(2, 3)).min() == 24
    scores = parallax_scores(train["rel_pose"].numpy(), train["anchors"].numpy())
    assert scores.min() > 0.05


def test_the_data_follow_the_seed() -> None:
    a, b, c = (SyntheticSceneVideo(seed=s, source_views=8, target_clips=8, eval_views=4) for s in (0, 0, 1))
    assert torch.equal(a.split("test")["target_y"], b.split("test")["target_y"])
    assert not torch.equal(a.split("test")["target_y"], c.split("test")["target_y"])


def _batch(data: SyntheticSceneVideo, split: str, n: int = 4) -> dict[str, torch.Tensor]:
    return {k: v[:n] for k, v in data.split(split).items()}


def test_pretrain_and_adapt_steps_and_the_unadapted_copy() -> None:
    data = SyntheticSceneVideo(seed=0, source_views=8, target_clips=8, eval_views=4)
    model = PointmapCNN(focal=22.0, width=8)
    assert model(_batch(data, "train")["x"]).shape == (4, 24, 24, 3)
    pretrain = GeometryAdaptation(model, optimizer=lambda p: torch.optim.Adam(p), method="pretrain")
    assert pretrain.initial is None
    task = GeometryAdaptation(model, optimizer=lambda p: torch.optim.Adam(p), method="adapt")
    task.log = lambda *args, **kwargs: None
    task.on_fit_start()
    loss = task.training_step(_batch(data, "train"), 0)
    assert torch.isfinite(loss) and loss.requires_grad
    assert set(task.adaptation_losses(_batch(data, "train"))) == {"anchor", "dense", "replay"}
    with torch.no_grad():
        for p in task.model.parameters():
            p.add_(0.1)
    task.mean_scene = data.split("train")["y"].mean(0)
    task.evaluate(_batch(data, "test"))
    logged = {}
    task.log = lambda name, value, **kwargs: logged.__setitem__(name, value)
    task.log_evaluation("test")
    assert logged["test/chamfer_unadapted"] != logged["test/chamfer"]
    assert logged["test/chamfer_reduction"] == pytest.approx(1 - logged["test/chamfer"] / logged["test/chamfer_unadapted"])


def test_adapt_needs_a_target_term() -> None:
    with pytest.raises(ValueError, match="target-domain term"):
        GeometryAdaptation(PointmapCNN(width=8), optimizer=lambda p: torch.optim.Adam(p), method="adapt",
                           anchor_weight=0.0, dense_weight=0.0)


def test_paper_scale_pieces_fail_early_without_their_files(monkeypatch, tmp_path) -> None:
    from components.geometry.rgbd import RGBDScenes
    from components.geometry.vggt import VGGTPointmap

    monkeypatch.delenv("EXPSPEC_SAGE_DATA_DIR", raising=False)
    monkeypatch.delenv("EXPSPEC_VGGT_WEIGHTS", raising=False)
    with pytest.raises(FileNotFoundError, match="EXPSPEC_SAGE_DATA_DIR"):
        RGBDScenes()
    with pytest.raises(FileNotFoundError, match="video.npz"):
        RGBDScenes(root=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="EXPSPEC_VGGT_WEIGHTS"):
        VGGTPointmap(focal=473.0)
