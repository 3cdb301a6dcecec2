"""StoMPP's binarization sites, binary models and progression callback (specs/stompp/)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from components.binarization.schedule import ProgressiveBinarization
from components.binarization.models import BinaryMLP, BinaryResNet
from components.binarization.binarize import BinarizationSite, BinaryActivation, BinaryLinear, binary_layers


@pytest.fixture(autouse=True)
def one_thread():
    """Small convolutions on a shared 2-core machine are ~50x slower with 2 threads than with 1."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 1.0])
def test_site_commits_a_fraction_p(p):
    torch.manual_seed(0)
    site = BinarizationSite((200, 50), "weights", "stompp")
    site.set_progress(p)
    assert site.binarized_fraction() == pytest.approx(p, abs=0.02)


def test_refresh_swaps_entries_but_keeps_the_share():
    torch.manual_seed(0)
    site = BinarizationSite((100, 100), "weights", "stompp")
    site.set_progress(0.5)
    before = site.mask.clone()
    site.refresh(0.2, torch.Generator().manual_seed(1))
    changed = float((site.mask != before).float().mean())
    assert 0.05 < changed < 0.15  # ~20 % resampled, half of those land on the other side
    assert site.binarized_fraction() == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize(
    "policy, committed_grad, free_grad",
    [("stompp", 0.0, 1.0), ("stompp_ste", 1.0, 1.0)],
    ids=["ste-free", "ste-on-committed"],
)
def test_gradient_through_committed_entries(policy, committed_grad, free_grad):
    site = BinarizationSite((4,), "activations", policy)
    site.mask.copy_(torch.tensor([1.0, 1.0, 0.0, 0.0]))
    site.sync()
    x = torch.tensor([0.3, -0.4, 0.5, -0.2], requires_grad=True)
    y = site(x)
    assert y.tolist() == pytest.approx([1.0, -1.0, 0.5, -0.2])
    y.sum().backward()
    assert x.grad.tolist() == [committed_grad, committed_grad, free_grad, free_grad]


def test_loading_a_state_dict_restores_the_mask_state():
    trained = BinarizationSite((3,), "weights", "stompp")
    trained.set_progress(1.0)
    fresh = BinarizationSite((3,), "weights", "stompp")
    fresh.load_state_dict(trained.state_dict())
    assert fresh(torch.tensor([0.2, -0.3, 0.1])).tolist() == [1.0, -1.0, 1.0]


def test_vanilla_ste_is_binary_from_the_start_and_fp_never():
    x = torch.tensor([0.3, -2.0, 0.0], requires_grad=True)
    ste = BinarizationSite((3,), "activations", "ste")
    assert ste(x).tolist() == [1.0, -1.0, 1.0]
    ste(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]  # hardtanh's gradient: zero where |x| > 1
    fp = BinarizationSite((3,), "activations", "fp")
    assert fp(x).tolist() == pytest.approx([0.3, -1.0, 0.0])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BinarizationSite((2,), "weights", "xnor"), "policy must be one of ste, stompp, stompp_ste, fp, got 'xnor'"),
        (lambda: BinarizationSite((2,), "biases", "stompp"), "kind must be 'weights' or 'activations', got 'biases'"),
        (lambda: BinarizationSite((2,), "weights", "stompp").set_progress(1.5), "progress must be in [0, 1], got 1.5"),
        (lambda: BinarizationSite((2,), "weights", "ste").set_progress(0.5),
         "a site with policy 'ste' has fixed masks; only stompp and stompp_ste sites can be progressed"),
        (lambda: BinaryResNet(20, 3, 10), "depth must be one of [18, 34, 50], got 20"),
        (lambda: ProgressiveBinarization(order="backward"), "order must be one of forward, reverse, random, global, got 'backward'"),
        (lambda: ProgressiveBinarization(end_fraction=0.0), "end_fraction must be in (start_fraction=0.0, 1], got 0.0"),
    ],
    ids=["policy", "kind", "progress", "fixed-mask", "resnet-depth", "order", "end"],
)
def test_value_errors_name_the_argument(make, message):
    with pytest.raises(ValueError) as error:
        make()
    assert str(error.value) == message


def test_binary_mlp_depth_range(argument_problems):
    assert argument_problems("models", "binary_mlp", depth=0) == {"depth": "must be >= 1, got integer 0"}
    assert argument_problems("models", "binary_mlp", depth=1) == {}


def test_progressive_binarization_ranges(argument_problems):
    assert argument_problems("callbacks", "progressive_binarization", refresh_fraction=2.0, start_fraction=1.0) == {
        "refresh_fraction": "must be >= 0 and <= 1, got number 2.0",
        "start_fraction": "must be >= 0 and < 1, got number 1.0"}
    assert argument_problems("callbacks", "progressive_binarization", refresh_fraction=1.0, refresh_period=0) == {}


def test_fully_committed_mlp_is_binary():
    torch.manual_seed(0)
    model = BinaryMLP(64, 10, depth=3, width=16, policy="stompp").eval()
    layers = model.binary_layers()
    assert [[s.kind for s in layer] for layer in layers] == [["weights", "activations"]] * 3
    for layer in layers:
        for site in layer:
            site.set_progress(1.0)
    seen = []
    model.blocks[1]["act"].register_forward_hook(lambda m, i, o: seen.append(o))
    assert model(torch.randn(5, 64)).shape == (5, 10)
    assert set(seen[0].unique().tolist()) == {-1.0, 1.0}
    linear = model.blocks[0]["linear"]
    assert set(linear.site(linear.weight).unique().tolist()) == {-1.0, 1.0}


@pytest.mark.parametrize("depth, units", [(18, 16), (34, 32), (50, 48)])
def test_resnet_layouts(depth, units):
    torch.manual_seed(0)
    model = BinaryResNet(depth, in_channels=3, out_features=10, width=4)
    assert len(model.binary_layers()) == units  # every residual-block conv is one binary layer
    assert model(torch.randn(2, 3, 8, 8)).shape == (2, 10)  # 8 -> 4 -> 2 -> 1 over the stages


def test_resnet_imagenet_stem():
    model = BinaryResNet(18, in_channels=3, out_features=7, stem="imagenet", width=4)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 7)


def test_sites_without_a_grouping_are_one_layer_each():
    model = nn.Sequential(BinaryLinear(4, 3), BinaryActivation(3))
    assert [[s.kind for s in layer] for layer in binary_layers(model)] == [["weights"], ["activations"]]


def _callback(model, **kwargs):
    callback = ProgressiveBinarization(**kwargs)
    callback.setup_layers(model)
    return callback


def test_forward_progression_goes_layer_by_layer():
    model = BinaryMLP(8, 2, depth=4, width=8)
    callback = _callback(model, order="forward")
    assert callback.layer_progress(0.375) == [1.0, 0.5, 0.0, 0.0]
    callback.total_steps = 100  # window 0 .. 85 steps
    assert callback.window_position(0) == 0.0 and callback.window_position(85) == 1.0
    callback.apply(0.5)
    assert [layer[0].progress for layer in model.binary_layers()] == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("order, first", [("forward", 0), ("reverse", 3)])
def test_order_decides_which_layer_commits_first(order, first):
    model = BinaryMLP(8, 2, depth=4, width=8)
    callback = _callback(model, order=order)
    callback.apply(0.25)
    committed = [i for i, layer in enumerate(model.binary_layers()) if layer[0].progress == 1.0]
    assert committed == [first]


def test_random_order_is_a_seeded_permutation():
    model = BinaryMLP(8, 2, depth=6, width=8)
    ids = [[id(s) for s in layer] for layer in model.binary_layers()]
    a = [[id(s) for s in layer] for layer in _callback(model, order="random", seed=3).layers]
    b = [[id(s) for s in layer] for layer in _callback(model, order="random", seed=3).layers]
    assert a == b and sorted(a) == sorted(ids) and a != ids


def test_what_selects_the_sites():
    model = BinaryMLP(8, 2, depth=3, width=8)
    callback = _callback(model, what="weights", order="global")
    callback.apply(1.0)
    assert callback.binarized_share("weights") == 1.0
    assert all(block["act"].site.binarized_fraction() == 0.0 for block in model.blocks)


def test_callback_refuses_fixed_policies_and_plain_models():
    with pytest.raises(ValueError, match="the model's policy is ste"):
        _callback(BinaryMLP(8, 2, depth=2, policy="ste"))
    with pytest.raises(ValueError, match="found no binarization sites"):
        _callback(nn.Linear(3, 2))


def _first_layer_grad(model):
    model.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(32, 8)), torch.randint(0, 2, (32,))).backward()
    grad = model.blocks[0]["linear"].weight.grad
    return 0.0 if grad is None else float(grad.abs().sum())  # None: no path from the loss at all


def test_a_committed_activation_blocks_the_gradient_upstream():
    """The paper's mechanism: STE-free, a fully committed binary activation severs gradient flow to
    every layer before it. Reverse progression commits the last layer first, so the first layer
    stops learning at once; forward progression commits the first layer's own entries first."""
    torch.manual_seed(0)
    model = BinaryMLP(8, 2, depth=4, width=8)
    _callback(model, order="reverse").apply(0.25)  # only the last layer is committed
    assert _first_layer_grad(model) == 0.0
    _callback(model, order="forward").apply(0.0)
    model.blocks[-1]["linear"].site.set_progress(1.0)  # last layer's weights only: gradient still flows
    assert _first_layer_grad(model) > 0.0
