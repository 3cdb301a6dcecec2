"""components/pde/model.py and task.py: the latent transformer's interface, the objectives, input
noise, and the rollout evaluation on closed-form cases."""

import pytest
import torch

from components.generative.vae import ConvVAE
from components.pde.model import LatentTransformer
from components.pde.task import LatentDynamics, persistence_l2re, relative_l2


def task(objective: str = "mse", input_noise: float = 0.0) -> LatentDynamics:
    torch.manual_seed(0)
    vae = ConvVAE(1, 16, latent_dim=4, dims=1, channels=(8,), beta=0.0, padding_mode="circular")
    return LatentDynamics(vae, LatentTransformer(latent_dim=4, context=2, d_model=16, n_layers=1, n_heads=2),
                          optimizer=lambda params: torch.optim.Adam(params, 1e-2), objective=objective,
                          input_noise=input_noise, sample_steps=4, rollout_steps=(1, 3))


def test_transformer_reads_context_state_and_time():
    model = LatentTransformer(latent_dim=4, context=2, d_model=16, n_layers=1, n_heads=2)
    context, x, t = torch.randn(3, 2, 4), torch.randn(3, 4), torch.rand(3)
    out = model(context, x, t)
    assert out.shape == (3, 4)
    assert not torch.allclose(out, model(context, x, 1 - t))  # the flow time matters
    assert not torch.allclose(model(context), model(context + 1))  # the context matters
    with pytest.raises(ValueError, match=r"expects a context \(B, 2, 4\), got \(3, 3, 4\)"):
        model(torch.randn(3, 3, 4))


def test_relative_l2_closed_form():
    truth = torch.tensor([[[[3.0, 4.0]]]])
    assert relative_l2(truth * 1.5, truth).item() == pytest.approx(0.5)
    assert relative_l2(torch.zeros_like(truth), truth).item() == pytest.approx(1.0)


def test_autoencoder_is_frozen_and_stays_in_eval_mode():
    t = task()
    t.train()
    assert not t.model.training and t.dynamics.training
    assert all(not p.requires_grad for p in t.model.parameters())
    assert {id(p) for g in t.configure_optimizers().param_groups for p in g["params"]} == {id(p) for p in t.dynamics.parameters()}


def test_zero_increment_model_rolls_out_persistence():
    t = task("mse")
    for p in t.dynamics.head.parameters():
        torch.nn.init.zeros_(p)
    context = torch.randn(5, 2, 4)
    rolled = t.rollout(context, 3)
    assert torch.equal(rolled, context[:, -1:].expand(-1, 3, -1))


def test_flow_sampler_is_reproducible_with_a_generator_and_input_noise_changes_the_loss():
    t = task("flow_matching", input_noise=0.5)
    t.eval()
    context = torch.randn(5, 2, 4)
    a = t.predict_next(context, torch.Generator().manual_seed(3))
    b = t.predict_next(context, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and not torch.equal(a, t.predict_next(context, torch.Generator().manual_seed(4)))
    frames = torch.randn(6, 3, 1, 16)
    t.set_latent_stats(frames)
    torch.manual_seed(1)
    noisy = t.loss(frames, 0.5)
    torch.manual_seed(1)
    assert not torch.equal(noisy, t.loss(frames, 0.0))


def test_mse_training_lowers_the_loss_and_windows_are_checked():
    t = task("mse")
    frames = torch.randn(32, 3, 1, 16)
    t.set_latent_stats(frames)
    optimizer = t.configure_optimizers()
    first = t.loss(frames, 0.0).item()
    for _ in range(60):
        optimizer.zero_grad()
        loss = t.loss(frames, 0.0)
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5 * first
    with pytest.raises(ValueError, match=r"training windows must hold context \+ 1 = 3 frames, got 4 \(data.window\)"):
        t.loss(torch.randn(2, 4, 1, 16), 0.0)


def test_persistence_repeats_the_last_context_frame():
    field = torch.tensor([3.0, 4.0])
    x = torch.stack([field, field, 2 * field, -field])[None, :, None]   # (1, 4 frames, 1 channel, 2 points)
    errors = persistence_l2re(x, context=2, horizon=2)
    assert errors.shape == (1, 2)
    assert errors[0].tolist() == pytest.approx([0.5, 2.0])   # ||f - 2f|| / ||2f||, ||f + f|| / ||f||

