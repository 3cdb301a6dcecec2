"""lmi_observer's pieces (components/sysid: systems.py, observer.py, certificate.py,
observer_task.py): the pendulum's Lur'e form, the certificate LMI solved by cvxpy/Clarabel and
cross-checked by eigenvalues, the projection onto certified weights, and a shrunk staged run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("cvxpy", reason="the sdp extra (cvxpy, clarabel, scs)")

from components.sysid.certificate import Certifier, eig_margin, lmi_matrix  # noqa: E402
from components.sysid.observer import NNObserver, linear_correction, rmse, simulate  # noqa: E402
from components.sysid.observer_task import luenberger_gain  # noqa: E402
from components.sysid.systems import DisturbedPendulum, rk4_trajectories  # noqa: E402

SPECS = Path(__file__).resolve().parents[3] / "specs/lmi_observer"


def test_the_pendulum_in_lure_form_is_its_own_equations() -> None:
    s = DisturbedPendulum(gravity=4.0, damping=0.3, torque=1.0, frequency=1.3)
    z = np.array([[0.7, -0.4, 0.2]])
    angle, velocity, d = z[0]
    expected = [velocity, -4.0 * np.sin(angle) - 0.3 * velocity + np.sin(1.3 * 0.5) + d, 0.0]
    assert np.allclose(s.field(z, 0.5)[0], expected)
    assert torch.allclose(s.field(torch.tensor(z), 0.5), torch.tensor(s.field(z, 0.5)))
    path = rk4_trajectories(s, z, 0.1, 20)
    assert path.shape == (1, 21, 3) and np.allclose(path[0, :, 2], d)   # the disturbance is constant


def test_a_luenberger_observer_is_certified_and_the_two_checks_agree() -> None:
    s = DisturbedPendulum()
    cert = Certifier(s, hidden=4)
    L, W1, W2 = luenberger_gain(s, 2.0, [1.0, 1.5, 2.0]), np.ones((4, 1)), np.zeros((3, 4))
    check = cert.check(L, W1, W2)
    assert check.status == "optimal" and check.iterations > 0
    assert eig_margin(s, check.P, check.lam, L, W1, W2, 0.1) > 0
    margin = cert.margin(L, W1, W2)
    assert margin.value < 0 and eig_margin(s, margin.P, margin.lam, L, W1, W2, 0.1) > 0


def test_the_open_loop_copy_and_a_destabilizing_network_are_not_certified() -> None:
    s = DisturbedPendulum()
    cert = Certifier(s, hidden=4)
    W1 = np.ones((4, 1))
    for L, W2 in ((np.zeros((3, 1)), np.zeros((3, 4))),                       # no correction at all
                  (luenberger_gain(s, 2.0, [1.0, 1.5, 2.0]), -20.0 * np.ones((3, 4)))):   # positive feedback
        assert cert.check(L, W1, W2).status == "infeasible"
        margin = cert.margin(L, W1, W2)
        assert margin.value > 0 and eig_margin(s, margin.P, margin.lam, L, W1, W2, 0.1) < 0


def test_projection_returns_certified_weights_near_the_given_ones() -> None:
    s = DisturbedPendulum()
    cert = Certifier(s, hidden=4)
    L, W1, W2 = np.zeros((3, 1)), np.ones((4, 1)), -20.0 * np.ones((3, 4))
    solve = cert.project(L, W1, W2)
    assert solve.L is not None and eig_margin(s, solve.P, solve.lam, solve.L, W1, solve.W2, 0.1) > 0
    worst = max(np.linalg.eigvalsh(lmi_matrix(s, solve.P, solve.lam, solve.L, W1, solve.W2, 0.1, d))[-1]
                for d in (-1.0, 1.0))
    assert worst <= -cert.eps * 0.99
    assert cert.check(solve.L, W1, solve.W2).status == "optimal"     # and the solver agrees


def test_the_observer_with_a_luenberger_gain_converges_and_the_open_loop_copy_does_not() -> None:
    s = DisturbedPendulum()
    rng = np.random.default_rng(0)
    z = torch.from_numpy(rk4_trajectories(s, s.sample_states(rng, 8), 0.1, 100))
    y = z[..., :1]
    good = simulate(s, linear_correction(luenberger_gain(s, 2.0, [1.0, 1.5, 2.0])), y, 0.1)
    open_loop = simulate(s, linear_correction(np.zeros((3, 1))), y, 0.1)
    assert rmse(good[:, -10:], z[:, -10:]) < 0.1 * rmse(good[:, :10], z[:, :10])
    assert rmse(good[:, -10:], z[:, -10:]) < 0.2 * rmse(open_loop[:, -10:], z[:, -10:])
    model = NNObserver(hidden=4, init_scale=0.0)          # zero network and L = 0: the open-loop copy
    assert torch.allclose(simulate(s, model.correction, y, 0.1), open_loop)


def test_a_shrunk_staged_run_certifies_after_the_lmi_stage(tracked: str) -> None:
    from framework.runner import run

    shrink = ["model.hidden=8", "data.num_steps=4", "data.train=4", "data.val=4", "data.test=4",
              "stages.lmi.data.num_steps=4", "stages.direct.data.num_steps=3", "task.round_steps=2",
              "task.points=16", "task.eval_every=1"]
    m = run(SPECS / "tiny.yaml", shrink).metrics
    assert m["lmi:test/certified"] == 1.0 and m["direct:test/certified"] == 1.0
    assert m["lmi:test/gradient_steps"] == 8 and m["direct:test/gradient_steps"] == 3
    assert m["lmi:test/sdp_solves"] == 3 and m["direct:test/sdp_solves"] == 3   # 2 projections + the check
    assert m["pretrain:test/sdp_solves"] == 0 and m["untrained:test/certified"] == 0.0
    assert m["untrained:test/rmse"] == pytest.approx(m["untrained:test/rmse_open_loop"])
