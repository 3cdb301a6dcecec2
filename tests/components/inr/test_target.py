"""The functional target INR: Fourier features and batched weights, checked in closed form."""

from __future__ import annotations

import math

import pytest
import torch

from components.inr.target import TargetINR, fourier_features, signal_mse


def test_fourier_features_are_the_coordinates_then_sines_and_cosines_of_octaves() -> None:
    coords = torch.tensor([[0.5, -0.25]])
    features = fourier_features(coords, 2)
    angles = torch.tensor([math.pi * 0.5, math.pi * 1.0, -math.pi * 0.25, -math.pi * 0.5])
    assert features.shape == (1, 10)
    assert torch.allclose(features, torch.cat([coords[0], torch.sin(angles), torch.cos(angles)])[None], atol=1e-6)
    assert torch.equal(fourier_features(coords, 0), coords)


def test_shapes_follow_width_depth_and_frequencies() -> None:
    target = TargetINR(coord_dims=2, out_channels=3, width=16, depth=2, frequencies=4)
    assert target.in_features == 18
    assert target.shapes == [(16, 18), (16, 16), (3, 16)]
    assert target.neurons() == [18, 16, 16, 3]


def test_each_signal_is_evaluated_with_its_own_weights() -> None:
    target = TargetINR(width=4, depth=1, frequencies=0)
    torch.manual_seed(0)
    weights = target.init_weights(batch=3)
    coords = torch.rand(3, 5, 2) * 2 - 1
    out = target(weights, coords)
    for i in range(3):  # the same as a plain nn.Linear MLP holding signal i's weights
        (w0, b0), (w1, b1) = [(w[i], b[i]) for w, b in weights]
        expected = torch.relu(coords[i] @ w0.T + b0) @ w1.T + b1
        assert torch.allclose(out[i], expected, atol=1e-6)


def test_init_weights_use_the_linear_default_bound() -> None:
    target = TargetINR(width=64, depth=1, frequencies=0)
    (w0, _), (w1, _) = target.init_weights(batch=2, generator=torch.Generator().manual_seed(0))
    assert w0.abs().max() <= 1 / math.sqrt(2) and w1.abs().max() <= 1 / 8
    assert w1.abs().max() > 0.9 / 8


def test_signal_mse_is_per_signal() -> None:
    prediction = torch.zeros(2, 4, 1)
    values = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 2.0]])[..., None]
    assert torch.equal(signal_mse(prediction, values), torch.tensor([1.0, 1.0]))


def test_a_wrong_number_of_layers_is_an_error() -> None:
    target = TargetINR(width=4, depth=2)
    with pytest.raises(ValueError, match="expected 3 \\(W, b\\) pairs, got 2"):
        target(target.init_weights(1)[:2], torch.zeros(1, 1, 2))
