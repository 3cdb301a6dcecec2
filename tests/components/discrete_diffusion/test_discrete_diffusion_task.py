"""components/discrete_diffusion/task.py: argument checks, the learnable Gamma trains through the
ELBO at its own learning rate, and the evaluation noise is shared across objectives."""

from __future__ import annotations

import functools

import pytest
import torch

from components.discrete_diffusion.task import DiscreteDiffusionLM
from components.optim.optimizers import AdamW
from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM


def denoiser(vocab_size: int = 15) -> CausalLM:
    torch.manual_seed(0)
    return CausalLM(vocab_size, mixer=functools.partial(SoftmaxAttention, n_heads=2, causal=False), d_model=16,
                    max_len=8)


def test_the_model_must_read_every_cluster_and_the_mask() -> None:
    with pytest.raises(ValueError, match=r"the model's vocab_size must be >= 15 \(V = 10 tokens \+ 4 clusters \+ the "
                                         r"mask\), got 12"):
        DiscreteDiffusionLM(denoiser(12), vocab_size=10, objective="lhdlm", num_clusters=4)
    with pytest.raises(ValueError, match="info_retention applies to the learnable map of lhdlm, not to mdlm"):
        DiscreteDiffusionLM(denoiser(), vocab_size=10, info_retention=1.0)
    DiscreteDiffusionLM(denoiser(11), vocab_size=10)  # mdlm needs the tokens and the mask only


def test_gamma_learns_through_the_elbo_at_its_own_learning_rate() -> None:
    task = DiscreteDiffusionLM(denoiser(), vocab_size=10, objective="lhdlm", num_clusters=4, gamma_lr_scale=10.0,
                               optimizer=functools.partial(AdamW, lr=1e-3))
    x = torch.randint(0, 10, (4, 8), generator=torch.Generator().manual_seed(0))
    task.nelbo(x, torch.full((4,), 0.7)).sum().backward()
    assert task.cluster_map.logits.grad.abs().sum() > 0
    assert task.model.embed.weight.grad.abs().sum() > 0
    groups = {g["name"]: g["lr"] for g in task.configure_optimizers().param_groups}
    assert groups == {"denoiser": pytest.approx(1e-3), "gamma": pytest.approx(1e-2)}


def test_evaluation_noise_is_the_same_for_every_run() -> None:
    x = torch.randint(0, 10, (4, 8), generator=torch.Generator().manual_seed(0))
    logged = []
    for _ in range(2):
        task = DiscreteDiffusionLM(denoiser(), vocab_size=10, eval_repeats=2)
        task.log = lambda name, value, **kwargs: logged.append(float(value))  # type: ignore[method-assign]
        task.validation_step({"x": x}, 0)
    assert logged[0] == logged[1]
