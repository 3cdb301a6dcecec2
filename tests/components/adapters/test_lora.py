"""components/adapters/lora.py: LoRA-family adapters through peft on any model's Linear layers."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

pytest.importorskip("peft")

from components.adapters import lora  # noqa: E402
from components.adapters.lora import lora_layers, peft_lora  # noqa: E402
from components.models.mlp import MLP  # noqa: E402

VARIANTS = [("lora", False, False), ("gaussian", False, False), ("pissa", False, False), ("olora", False, False),
            ("milora", False, False), ("lora", True, False), ("lora", False, True), ("pissa", False, True)]


def mlp(seed: int) -> MLP:
    torch.manual_seed(seed)
    return MLP(16, 5, hidden=(12, 12))


def adapted(seed: int = 1, **kwargs) -> nn.Module:
    return peft_lora(mlp(seed), **{"rank": 3, "alpha": 6.0, **kwargs})


def pretrained_weights() -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in mlp(0).state_dict().items()}


@pytest.mark.parametrize("init, rslora, dora", VARIANTS)
def test_every_variant_starts_as_the_loaded_base(init: str, rslora: bool, dora: bool) -> None:
    """Built on random weights, then given a base checkpoint: the model computes what the
    checkpoint's base computes (each init is function-preserving, and runs again on the loaded W)."""
    model = adapted(init=init, rslora=rslora, dora=dora)
    missing = model.load_state_dict(pretrained_weights(), strict=False).missing_keys
    assert missing and all(".lora_" in k for k in missing)  # only the adapter's tensors are new
    x = torch.randn(7, 16)
    with torch.no_grad():
        assert torch.allclose(model(x), mlp(0)(x), atol=1e-5)


def test_base_weights_keep_the_base_models_names() -> None:
    names = set(adapted().state_dict())
    base = set(mlp(0).state_dict())
    assert base <= names
    assert names - base == {f"net.{i}.lora_{m}.default.weight" for i in (0, 2, 4) for m in "AB"}


def test_pissa_and_milora_start_from_the_singular_components_of_the_loaded_weight() -> None:
    w = mlp(0).net[2].weight.detach().double()
    u, s, vh = torch.linalg.svd(w)
    for init, part in (("pissa", slice(0, 3)), ("milora", slice(-3, None))):
        model = adapted(init=init)
        model.load_state_dict(pretrained_weights(), strict=False)
        layer = model.net[2]
        update = layer.scaling["default"] * layer.lora_B["default"].weight @ layer.lora_A["default"].weight
        expected = u[:, part] @ torch.diag(s[part]) @ vh[part]
        assert torch.allclose(update.double(), expected, atol=1e-5), init
        assert torch.allclose(layer.base_layer.weight.double() + update.double(), w, atol=1e-5)


def test_dora_magnitude_is_the_loaded_weights_row_norm() -> None:
    model = adapted(dora=True)
    model.load_state_dict(pretrained_weights(), strict=False)
    magnitude = model.net[0].lora_magnitude_vector["default"].weight
    assert torch.allclose(magnitude, mlp(0).net[0].weight.norm(dim=1), atol=1e-6)


def test_scaling_of_lora_and_rslora() -> None:
    assert adapted().net[0].scaling["default"] == 6.0 / 3
    assert math.isclose(adapted(rslora=True).net[0].scaling["default"], 6.0 / math.sqrt(3))


def test_only_the_adapters_train_and_a_saved_adapter_loads_as_it_is() -> None:
    model = adapted(init="pissa")
    model.load_state_dict(pretrained_weights(), strict=False)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {f"net.{i}.lora_{m}.default.weight" for i in (0, 2, 4) for m in "AB"}
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model(torch.randn(8, 16)).square().mean().backward()
    optimizer.step()
    after = model.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {f"net.{i}.lora_{m}.default.weight" for i in (0, 2, 4) for m in "AB"}
    restored = adapted(seed=5, init="pissa")
    restored.load_state_dict(after)  # adapter tensors included: restored as they are, not re-initialized
    x = torch.randn(4, 16)
    with torch.no_grad():
        assert torch.equal(restored(x), model(x))


def test_targets_choose_the_layers() -> None:
    model = adapted(targets=["net.4"])
    assert [type(m).__name__ for m in lora_layers(model)] == ["Linear"] and model.net[4] is lora_layers(model)[0]


@pytest.mark.parametrize(
    "base, kwargs, message",
    [(lambda: mlp(0), {"init": "milora", "dora": True}, "dora combines with init 'lora', 'gaussian', 'pissa' or 'olora', not 'milora'"),
     (lambda: nn.Sequential(nn.ReLU()), {}, "targets: the base model (Sequential) has no nn.Linear layer to adapt"),
     (lambda: mlp(0), {"init": "milora", "rank": 6}, "rank: milora needs rank <= min(out, in) = 5 of every target, got 6")],
)
def test_bad_arguments_are_named(base, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        peft_lora(base(), **kwargs)
    assert str(error.value) == message


def test_missing_peft_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lora, "peft", None)
    with pytest.raises(ImportError) as error:
        peft_lora(mlp(0))
    assert str(error.value) == "peft_lora needs `peft`, which comes with the optional extra 'peft': pip install 'expspec[peft]'"
