"""The hypernetworks: output shapes, what their parameter counts depend on (the paper's structural
claim), that the rollouts read the signal, and that inner steps work under inference mode."""

from __future__ import annotations

import pytest
import torch

from components.callbacks.parameter_count import trainable_parameters
from components.inr.data import as_points
from components.inr.hypernets import (
    AttnRolloutHypernet, LearnedInitKSteps, MLPRolloutHypernet, PerSignalFit, TransINRHypernet,
)
from components.inr.target import signal_mse

SMALL = dict(width=8, depth=2, frequencies=1)


def _images(n: int = 4, side: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    points = as_points(torch.rand(n, 1, side, side, generator=torch.Generator().manual_seed(seed)).numpy())
    return torch.from_numpy(points["x"]), torch.from_numpy(points["y"])


MODELS = {
    "attn": lambda **k: AttnRolloutHypernet(d_model=16, heads=2, steps=2, **k),
    "trans_inr": lambda **k: TransINRHypernet(d_model=16, heads=2, layers=1, **k),
    "mlp_rollout": lambda **k: MLPRolloutHypernet(steps=2, **k),
    "learned_init": lambda **k: LearnedInitKSteps(inner_steps=2, **k),
    "fit": lambda **k: PerSignalFit(fit_steps=3, **k),
}


@pytest.mark.parametrize("name", MODELS)
def test_every_model_reconstructs_each_signal_under_inference_mode(name: str) -> None:
    x, y = _images()
    model = MODELS[name](**SMALL).eval()
    with torch.inference_mode():  # as Lightning's test loop: inner gradient steps must still work
        out = model(x)
    assert out.shape == y.shape and torch.isfinite(out).all()


def test_attention_rollout_parameters_do_not_depend_on_the_width() -> None:
    counts = {w: trainable_parameters(AttnRolloutHypernet(width=w, d_model=16, heads=2)) for w in (8, 32, 128)}
    assert len(set(counts.values())) == 1, counts


def test_mlp_rollout_parameters_grow_as_width_to_the_fourth() -> None:
    small, large = (trainable_parameters(MLPRolloutHypernet(width=w, depth=2, frequencies=0)) for w in (16, 32))
    # dominated by the hidden layer's MLP, 2 (w^2 + w)^2: x 15.5 from width 16 to 32
    assert 14 < large / small < 16.5


def test_trans_inr_parameters_grow_with_the_width() -> None:
    small, large = (trainable_parameters(TransINRHypernet(width=w, d_model=16, heads=2, layers=1)) for w in (16, 32))
    assert large > small


def test_the_attention_rollout_output_depends_on_the_signal() -> None:
    x, _ = _images(n=2)
    model = AttnRolloutHypernet(d_model=16, heads=2, **SMALL)
    torch.manual_seed(0)
    same = model(torch.cat([x[:1], x[:1]]))
    assert torch.allclose(same[0], same[1], atol=1e-6)
    both = model(x)
    assert not torch.allclose(both[0], both[1], atol=1e-4)


def test_zero_inner_steps_is_one_inr_for_every_signal() -> None:
    x, _ = _images()
    out = LearnedInitKSteps(inner_steps=0, **SMALL)(x)
    assert torch.allclose(out, out[:1].expand_as(out))


def test_inner_steps_lower_the_reconstruction_error() -> None:
    x, y = _images()
    torch.manual_seed(0)
    errors = [signal_mse(LearnedInitKSteps(inner_steps=k, inner_lr=0.5, **SMALL)(x), y).mean().item()
              for k in (0, 5)]
    assert errors[1] < errors[0]


def test_per_signal_fitting_converges_with_more_steps() -> None:
    x, y = _images()
    errors = []
    for steps in (0, 20, 200):
        torch.manual_seed(0)  # the same random initialization
        errors.append(signal_mse(PerSignalFit(fit_steps=steps, fit_lr=1e-2, **SMALL)(x), y).mean().item())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.2 * errors[0]


def test_per_signal_fits_are_independent_of_the_other_signals() -> None:
    x, _ = _images()
    other = x.clone()
    other[2:, :, 2:] *= 0.5  # other values for signals 2 and 3, the same initialization for all
    torch.manual_seed(0)
    first = PerSignalFit(fit_steps=5, **SMALL)(x)
    torch.manual_seed(0)
    second = PerSignalFit(fit_steps=5, **SMALL)(other)
    assert torch.allclose(first[:2], second[:2], atol=1e-6)
    assert not torch.allclose(first[2:], second[2:], atol=1e-3)


def test_the_wrong_point_layout_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"expected points of shape \(B, P, 3\) \(coordinates then values\), got \(2, 5, 4\)"):
        LearnedInitKSteps(**SMALL)(torch.zeros(2, 5, 4))


@pytest.mark.parametrize("cls", [AttnRolloutHypernet, TransINRHypernet])
def test_heads_must_divide_the_token_width(cls) -> None:
    with pytest.raises(ValueError, match="d_model must be divisible by heads, got d_model 10 and heads 4"):
        cls(d_model=10, heads=4)


def test_the_mlp_rollout_stays_finite_when_a_layer_gets_no_gradient() -> None:
    """Constant signals on an all-zero image: the normalization must not divide 0 by 0 (nor
    differentiate sqrt at 0 in the second-order backward pass)."""
    x, _ = _images()
    x[..., 2:] = 0.0
    model = MLPRolloutHypernet(steps=2, **SMALL)
    with torch.no_grad():
        for p in model.init:
            p.zero_()  # every gradient of the hidden layers is exactly zero
    out = model(x)
    out.pow(2).mean().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
