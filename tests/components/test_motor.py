"""The motor family (components/motor/): the torch two-link arm is the rigid-body dynamics and is
differentiable; the controller's two conditionings; the adapter analysis (participation ratio,
subspace overlap); motornet's arm through the same interface when the extra is installed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from components.motor.data import ReachRepertoire  # noqa: E402
from components.motor.models import MotorRNN  # noqa: E402
from components.motor.plants import TwoLinkArm  # noqa: E402
from components.motor.task import participation_ratio, subspace_overlaps  # noqa: E402


def test_arm_step_is_the_rigid_body_dynamics() -> None:
    """One semi-implicit Euler step equals M(q)^-1 (tau - h(q, dq) - B dq), solved directly."""
    arm = TwoLinkArm(dt=0.01)
    gen = torch.Generator().manual_seed(0)
    joint, action = torch.randn(5, 4, generator=gen), torch.randn(5, 2, generator=gen)
    arm.reset(options={"joint_state": joint})
    arm.step(action)
    q, dq = joint[:, :2], joint[:, 2:]
    c2, s2 = torch.cos(q[:, 1]), torch.sin(q[:, 1])
    m12 = arm.a3 + arm.a2 * c2
    mass = torch.stack([torch.stack([arm.a1 + 2 * arm.a2 * c2, m12], 1), torch.stack([m12, torch.full_like(c2, arm.a3)], 1)], 1)
    h = torch.stack([-arm.a2 * s2 * (2 * dq[:, 0] * dq[:, 1] + dq[:, 1] ** 2), arm.a2 * s2 * dq[:, 0] ** 2], 1)
    ddq = torch.linalg.solve(mass, (arm.max_torque * action - arm.damping * dq - h).unsqueeze(2)).squeeze(2)
    new_dq = dq + 0.01 * ddq
    assert torch.allclose(arm.joint, torch.cat([q + 0.01 * new_dq, new_dq], 1), atol=1e-5)


def test_arm_is_differentiable_and_gymnasium_shaped() -> None:
    arm = TwoLinkArm(max_episode_steps=3)
    obs, info = arm.reset(options={"batch_size": 2})
    assert obs.shape == (2, 6) and torch.allclose(info["states"]["fingertip"], arm.home_hand.expand(2, 2))
    action = torch.full((2, 2), 0.3, requires_grad=True)
    for step in range(3):
        obs, reward, terminated, truncated, info = arm.step(action)
        assert reward is None and terminated is False and truncated == (step == 2)
    info["states"]["fingertip"].sum().backward()
    assert action.grad is not None and action.grad.abs().sum() > 0


@pytest.mark.parametrize("conditioning", ["adapters", "input"])
def test_controller_contract(conditioning: str) -> None:
    model = MotorRNN(8, 2, codes=4, hidden=16, conditioning=conditioning)
    code = torch.nn.functional.one_hot(torch.tensor([0, 3]), 4).float()
    h = model.initial_state(2)
    u, h = model.step(torch.zeros(2, 8), h, model.context(code))
    assert u.shape == (2, 2) and h.shape == (2, 16)
    changes = model.adapter_changes()
    assert (changes is None) == (conditioning == "input")
    if changes is not None:
        assert changes.abs().max() == 0  # zero init: nothing learned yet


def test_random_adapter_init_is_kept_for_the_learned_change() -> None:
    model = MotorRNN(8, 2, codes=3, hidden=16, adapter_init="random")
    with torch.no_grad():
        model.adapters += 1.0
    assert torch.allclose(model.adapter_changes(), torch.ones(3, 16, 16))


def test_participation_ratio_and_overlap() -> None:
    gen = torch.Generator().manual_seed(0)
    u = torch.linalg.qr(torch.randn(32, 32, generator=gen))[0]
    rank_two = u[:, :2] @ torch.randn(2, 32, generator=gen)
    assert participation_ratio(rank_two) <= 2.0 + 1e-9
    assert participation_ratio(torch.randn(64, 64, generator=gen)) > 20  # a Gaussian matrix: about 32
    same = torch.stack([u[:, :2] @ torch.randn(2, 32, generator=gen) for _ in range(2)])
    apart = torch.stack([u[:, :2] @ torch.randn(2, 32, generator=gen), u[:, 2:4] @ torch.randn(2, 32, generator=gen)])
    assert subspace_overlaps(same, 2).item() == pytest.approx(1.0)
    assert subspace_overlaps(apart, 2).item() == pytest.approx(0.0, abs=1e-9)


def test_repertoire_batches_are_seeded_and_balanced() -> None:
    data = ReachRepertoire(TwoLinkArm(), primitives=8, batch_size=16, seed=3)
    a, b = data.batch(5), data.batch(5)
    assert torch.equal(a["code"], b["code"]) and torch.equal(a["start"], b["start"])
    assert torch.bincount(a["code"], minlength=8).tolist() == [2] * 8 and torch.equal(a["given"], a["code"])
    assert data.info() == {"in_features": 8, "out_features": 2, "codes": 8}
    shuffled = ReachRepertoire(TwoLinkArm(), primitives=8, batch_size=16, seed=3, codes="random").batch(5)
    assert not torch.equal(shuffled["given"], shuffled["code"])


def test_motornet_arm_through_the_same_interface() -> None:
    pytest.importorskip("motornet")
    from components.motor.plants import MotornetArm26

    arm = MotornetArm26(max_episode_steps=6)
    obs, info = arm.reset(options={"batch_size": 2})
    assert obs.shape == (2, arm.observation_dim) and arm.action_dim == 6
    action = torch.tensor([[0.9, 0.0, 0.9, 0.0, 0.9, 0.0]] * 2, requires_grad=True)
    for _ in range(6):  # activation, force, acceleration, then position: a few steps of lag
        obs, _, _, truncated, info = arm.step(action)
    assert truncated
    info["states"]["fingertip"].sum().backward()
    assert action.grad is not None and action.grad.abs().sum() > 0


def test_motornet_arm_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Paper scale without motornet: the plant fails when it is built, naming the `motor` extra."""
    import sys

    from components.motor.plants import MotornetArm26

    monkeypatch.setitem(sys.modules, "motornet", None)
    with pytest.raises(ImportError, match=r"motornet.*expspec\[motor\]"):
        MotornetArm26()
