"""components/sequence/ssm.py: the SSD quadratic form, its recurrence, and the Mamba-2 mixer."""

from __future__ import annotations

import math

import pytest
import torch

from components.sequence.ssm import SSDMixer, decay_matrix, ssd, ssd_recurrent


def test_decay_matrix_by_hand() -> None:
    e = math.exp
    expected = torch.tensor([[1.0, 0.0, 0.0], [e(-2), 1.0, 0.0], [e(-5), e(-3), 1.0]], dtype=torch.float64)
    got = decay_matrix(torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64))
    assert torch.allclose(got, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("length", [1, 7, 20])
def test_quadratic_form_equals_the_recurrence(length: int) -> None:
    g = torch.Generator().manual_seed(length)
    x = torch.randn(2, length, 3, 4, generator=g, dtype=torch.float64)
    dt = torch.rand(2, length, 3, generator=g, dtype=torch.float64) + 0.05
    a = -(torch.rand(3, generator=g, dtype=torch.float64) * 4 + 0.5)
    b, c = (torch.randn(2, length, 5, generator=g, dtype=torch.float64) for _ in range(2))
    assert (ssd(x, dt, a, b, c) - ssd_recurrent(x, dt, a, b, c)).abs().max() < 1e-10


def test_one_step_by_hand() -> None:
    # T = 2, one head, one channel, N = 1: y_0 = c0 b0 dt0 x0; y_1 = c1 (e^{dt1 a} b0 dt0 x0 + b1 dt1 x1)
    x = torch.tensor([2.0, 3.0], dtype=torch.float64).view(1, 2, 1, 1)
    dt = torch.tensor([0.5, 0.25], dtype=torch.float64).view(1, 2, 1)
    a = torch.tensor([-2.0], dtype=torch.float64)
    b = torch.tensor([1.5, -1.0], dtype=torch.float64).view(1, 2, 1)
    c = torch.tensor([2.0, 4.0], dtype=torch.float64).view(1, 2, 1)
    y = ssd(x, dt, a, b, c).flatten().tolist()
    assert y == pytest.approx([2.0 * 1.5 * 0.5 * 2.0, 4.0 * (math.exp(-0.5) * 1.5 * 0.5 * 2.0 - 1.0 * 0.25 * 3.0)], abs=1e-12)


def test_mixer_is_causal_and_keeps_the_width() -> None:
    torch.manual_seed(0)
    mixer = SSDMixer(d_model=16, d_state=4, head_dim=8)
    u = torch.randn(2, 10, 16)
    changed = u.clone()
    changed[:, 6:] += 1.0
    out, out_changed = mixer(u), mixer(changed)
    assert out.shape == (2, 10, 16)
    assert torch.allclose(out[:, :6], out_changed[:, :6], atol=1e-6)
    assert not torch.allclose(out[:, 6:], out_changed[:, 6:], atol=1e-4)


def test_initial_step_sizes_and_decays_are_in_range() -> None:
    torch.manual_seed(0)
    mixer = SSDMixer(d_model=64, head_dim=8, dt_min=0.01, dt_max=0.1, a_max=8.0)
    assert mixer.n_heads == 16
    dt = torch.nn.functional.softplus(mixer.dt_bias)
    assert dt.min() >= 0.01 - 1e-6 and dt.max() <= 0.1 + 1e-6
    rate = torch.exp(mixer.a_log)
    assert rate.min() >= 1.0 and rate.max() <= 8.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"head_dim": 5}, "head_dim must divide expand \\* d_model = 32, got head_dim=5"),
    ({"dt_min": 0.2, "dt_max": 0.1}, "dt_min must be <= dt_max, got dt_min=0.2, dt_max=0.1"),
    ({"a_max": 0.5}, "a_max must be >= 1, got 0.5"),
])
def test_errors_name_the_argument(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SSDMixer(d_model=16, **kwargs)
