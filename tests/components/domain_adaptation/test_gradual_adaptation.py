"""gradual_domain_adaptation: the pseudo-label filter, the consistency KL, the time map of the flow's
intervals, GST's round schedule, and the argument checks."""

from __future__ import annotations

import functools
import math

import lightning as L
import pytest
import torch

from components.domain_adaptation.data import DomainSequence
from components.domain_adaptation.model import EncoderClassifier
from components.domain_adaptation.task import GradualDomainAdaptation, confident_pseudo_labels, semantic_consistency
from components.generative.flow_matching import VelocityMLP

ADAM = functools.partial(torch.optim.Adam, lr=1e-2)


def test_pseudo_labels_keep_the_most_confident_rows() -> None:
    logits = torch.tensor([[0.0, 5.0], [1.0, 0.0], [9.0, 0.0], [0.0, 0.2]])
    index, labels = confident_pseudo_labels(logits, keep_fraction=0.5)
    assert index.tolist() == [2, 0] and labels.tolist() == [0, 1]
    assert len(confident_pseudo_labels(logits, 0.6)[0]) == 3  # ceil(0.6 x 4)


def test_semantic_consistency_is_the_kl_from_the_teacher() -> None:
    teacher, student = torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 0.0]])
    p = torch.softmax(teacher, -1)
    expected = float((p * (p.log() - math.log(0.5))).sum())
    assert semantic_consistency(student, teacher).item() == pytest.approx(expected, rel=1e-6)
    assert semantic_consistency(teacher, teacher).item() == pytest.approx(0.0, abs=1e-7)


def test_each_interval_runs_on_its_own_slice_of_global_time() -> None:
    class Clock(torch.nn.Module):  # v = tau: shows which global time an interval asks for
        dim = 4

        def forward(self, z: torch.Tensor, tau: torch.Tensor, cond: None) -> torch.Tensor:
            return tau[:, None].expand_as(z)

    task = GradualDomainAdaptation(EncoderClassifier(2, 2, 4), ADAM, method="flow", velocity=Clock())
    task.intervals = 4
    s = torch.tensor([0.0, 0.5, 1.0])
    assert torch.allclose(task.segment(2)(torch.zeros(3, 4), s, None)[:, 0], (2 + s) / 4 / 4)


def test_gradual_self_training_walks_the_domains_in_order() -> None:
    L.seed_everything(0)
    data = DomainSequence("rotating_moons", (0.0, 30.0, 60.0, 90.0), num_train=64, num_val=16, num_test=16,
                          batch_size=16)
    task = GradualDomainAdaptation(EncoderClassifier(2, 2, 4), ADAM, method="gradual_self_training")
    rounds = []
    task.refresh_teacher = lambda r, original=task.refresh_teacher: (rounds.append(r), original(r))
    L.Trainer(max_steps=9, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0).fit(task, data)
    assert rounds == [0, 0, 0, 1, 1, 1, 2, 2, 2] and int(task.teacher_round) == 2


def test_gst_with_a_frozen_encoder_adapts_the_head_alone() -> None:
    """freeze_encoder: GST trains the head only (FlowGDA's trainable part of the classifier); the
    encoder keeps the source model's weights, and the optimizer holds the head alone."""
    L.seed_everything(0)
    data = DomainSequence("rotating_moons", (0.0, 30.0, 60.0), num_train=64, num_val=16, num_test=16, batch_size=16)
    model = EncoderClassifier(2, 2, 4)
    encoder, head = [p.detach().clone() for p in model.encoder.parameters()], model.head.weight.detach().clone()
    task = GradualDomainAdaptation(model, ADAM, method="gradual_self_training", freeze_encoder=True)
    L.Trainer(max_steps=6, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0).fit(task, data)
    assert all(torch.equal(a, b) for a, b in zip(encoder, model.encoder.parameters()))
    assert not torch.equal(head, model.head.weight)
    trained = {id(p) for group in task.optimizers().optimizer.param_groups for p in group["params"]}
    assert trained == {id(p) for p in model.head.parameters()}


@pytest.mark.slow
def test_flow_learns_a_transport_that_beats_the_frozen_source_head() -> None:
    """Moons rotated 0 -> 20 -> 40 deg: after the two phases the head is right on the 40-deg domain
    more often than the source classifier it started from. Slow: ~400 training steps."""
    L.seed_everything(0)
    data = DomainSequence("rotating_moons", (0.0, 20.0, 40.0), num_train=256, num_val=16, num_test=256)
    model = EncoderClassifier(2, 2, 8, (32,))
    trainer = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                   num_sanity_val_steps=0, limit_val_batches=0)
    L.Trainer(max_steps=150, **trainer).fit(GradualDomainAdaptation(model, ADAM), data)
    test = data.split("test")
    source = (model(test["x"][:, 2]).argmax(-1) == test["y"][:, 2]).float().mean().item()
    flow = GradualDomainAdaptation(model, ADAM, method="flow", velocity=VelocityMLP(8, hidden=(32, 32)),
                                   transport_steps=100)
    L.Trainer(max_steps=160, **trainer).fit(flow, data)
    adapted = (model(test["x"][:, 2]).argmax(-1) == test["y"][:, 2]).float().mean().item()
    assert torch.equal(flow.teacher.encoder.net[0].weight, model.encoder.net[0].weight)  # encoder frozen
    assert adapted > source


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "flow"}, "method 'flow' needs a velocity field"),
    ({"method": "source_only", "velocity": VelocityMLP(4)}, "the other methods take none"),
    ({"method": "flow", "velocity": VelocityMLP(3)}, r"velocity.dim must equal model.latent_dim \(4\), got 3"),
    ({"method": "source_only", "freeze_encoder": True}, "freeze_encoder is for the self-training methods"),
])
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GradualDomainAdaptation(EncoderClassifier(2, 2, 4), ADAM, **kwargs)
