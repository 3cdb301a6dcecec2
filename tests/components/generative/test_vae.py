"""The conv VAE: shapes in 1-D and 2-D, its objective in closed form, periodic padding, and the
autoencoding task fitting it."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from components.generative.task import Autoencoding
from components.generative.vae import ConvVAE


@pytest.mark.parametrize(("dims", "size"), [(1, 64), (2, 16)])
def test_shapes(dims: int, size: int) -> None:
    vae = ConvVAE(in_channels=2, size=size, latent_dim=8, dims=dims, channels=(8, 16))
    x = torch.randn(3, 2, *(size,) * dims)
    out = vae(x)
    assert out["reconstruction"].shape == x.shape
    assert out["mean"].shape == out["logvar"].shape == out["z"].shape == (3, 8)
    with pytest.raises(ValueError, match=r"expects inputs \(B, 2"):
        vae(torch.randn(3, 1, *(size,) * dims))


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="divisible by 2\\*\\*len"):
        ConvVAE(in_channels=1, size=10, channels=(8, 16))
    with pytest.raises(ValueError, match="dims must be 1 or 2"):
        ConvVAE(in_channels=1, size=8, dims=3)


def test_loss_terms_are_the_gaussian_error_and_kl() -> None:
    torch.manual_seed(0)
    vae = ConvVAE(in_channels=1, size=8, latent_dim=4, dims=2, channels=(4,), beta=0.5).eval()
    x = torch.randn(5, 1, 8, 8)
    terms = vae.loss_terms(x)
    mean, logvar = vae.encode(x)
    recon = vae.decode(mean)  # eval: the latent is the mean
    expected_rec = ((recon - x) ** 2).sum(dim=(1, 2, 3)).mean()
    expected_kl = (0.5 * (mean ** 2 + logvar.exp() - 1 - logvar).sum(1)).mean()
    assert torch.allclose(terms["reconstruction"], expected_rec)
    assert torch.allclose(terms["kl"], expected_kl)
    assert torch.allclose(terms["loss"], expected_rec + 0.5 * expected_kl)
    assert terms["relative_error"] == pytest.approx(((recon - x).flatten(1).norm(dim=1) / x.flatten(1).norm(dim=1)).mean().item(), rel=1e-5)


def test_beta_zero_is_deterministic_and_training_samples_otherwise() -> None:
    x = torch.randn(4, 1, 16)
    plain = ConvVAE(in_channels=1, size=16, dims=1, channels=(4,), beta=0.0).train()
    assert torch.equal(plain(x)["z"], plain(x)["z"])
    vae = ConvVAE(in_channels=1, size=16, dims=1, channels=(4,), beta=1.0).train()
    assert not torch.equal(vae(x)["z"], vae(x)["z"])


def test_circular_padding_commutes_with_a_shift_of_the_grid() -> None:
    torch.manual_seed(0)
    encoder = ConvVAE(in_channels=1, size=16, dims=1, channels=(4,), padding_mode="circular").encoder[0]
    x = torch.randn(2, 1, 16)
    # a stride-2 conv commutes with shifts by 2 on a periodic grid (by 1 of its output)
    assert torch.allclose(encoder(torch.roll(x, 2, dims=-1)), torch.roll(encoder(x), 1, dims=-1), atol=1e-6)


def test_autoencoding_task_fits_a_vae() -> None:
    torch.manual_seed(0)
    centres = torch.randn(4, 1, 8, 8)
    data = [{"x": centres[i % 4] + 0.05 * torch.randn(1, 8, 8)} for i in range(256)]
    loader = DataLoader(data, batch_size=32)
    vae = ConvVAE(in_channels=1, size=8, latent_dim=4, dims=2, channels=(16,), beta=1e-3)
    before = vae.eval().loss_terms(centres)["reconstruction"].item()
    task = Autoencoding(vae, optimizer=lambda p: torch.optim.Adam(p, lr=1e-2))
    trainer = L.Trainer(max_epochs=8, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(task, loader, loader)
    assert {"val/loss", "val/reconstruction", "val/kl", "val/relative_error"} <= set(trainer.callback_metrics)
    after = vae.eval().loss_terms(centres)["reconstruction"].item()
    assert after < 0.2 * before
    with pytest.raises(ValueError, match="loss_terms"):
        Autoencoding(torch.nn.Linear(2, 2), optimizer=lambda p: torch.optim.Adam(p))
