"""The posthoc_analysis task and the laplace_rescaling analysis (gamma_laplace's claim, tiny)."""

import lightning as L
import pytest
import torch

from components.bayes.invariance import LaplaceRescaling
from components.data.sklearn import SklearnDataset
from components.models.mlp import MLP
from components.tasks.posthoc import PosthocAnalysis, collect_splits


@pytest.fixture(scope="module")
def data() -> SklearnDataset:
    return SklearnDataset("breast_cancer")


@pytest.fixture(scope="module")
def trained(data: SklearnDataset) -> MLP:
    """30-8-2 ReLU MLP, 200 full-batch Adam steps (train accuracy ~1, a sharp minimum)."""
    torch.manual_seed(0)
    model = MLP(30, 2, hidden=[8])
    train = data.split("train")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(train["x"]), train["y"]).backward()
        optimizer.step()
    return model.eval()


def test_standard_laplace_varies_across_rescalings_and_canonical_does_not(data, trained):
    """The paper's claim: std/spread of the EB evidence > 1 nat for the standard Laplace, < 1e-6
    after gamma-canonicalization; the same for the mean linearized predictive variance."""
    before = [p.clone() for p in trained.parameters()]
    results = LaplaceRescaling(num_rescalings=3)(trained, {s: data.split(s) for s in ("train", "test")})
    assert results["function_max_diff"] < 1e-6
    assert results["evidence_spread"] > 1.0 and results["evidence_std"] > 1.0
    assert results["variance_spread_rel"] > 0.1
    assert results["prior_precision_ratio"] > 1.5
    assert results["canonical_evidence_spread"] < 1e-6
    assert results["canonical_variance_spread_rel"] < 1e-6
    assert results["canonical_prior_precision_ratio"] == pytest.approx(1.0, abs=1e-9)
    assert all(torch.equal(p, q) for p, q in zip(before, trained.parameters())), "the model is untouched"


class Recorder:
    """An analysis that needs autograd (as Laplace does) and records what it was given."""

    splits = ("train", "val")

    def __call__(self, model, splits):
        self.names = sorted(splits)
        x = splits["train"]["x"][:5]
        grads = torch.autograd.grad(model(x).sum(), list(model.parameters()))
        return {"grad_norm": float(sum(g.pow(2).sum() for g in grads)), "n_val": len(splits["val"]["x"])}


def _trainer() -> L.Trainer:
    return L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                     enable_checkpointing=False, max_epochs=1)


def test_task_runs_the_analysis_in_the_test_loop_and_logs_test_keys(data):
    analysis = Recorder()
    task = PosthocAnalysis(model=MLP(30, 2, hidden=[4]), analysis=analysis)
    trainer = _trainer()
    trainer.test(task, datamodule=data, verbose=False)
    assert analysis.names == ["train", "val"]
    assert set(trainer.callback_metrics) == {"test/grad_norm", "test/n_val"}
    assert float(trainer.callback_metrics["test/n_val"]) == len(data.split("val")["x"])
    assert float(trainer.callback_metrics["test/grad_norm"]) > 0


def test_task_refuses_to_train(data):
    task = PosthocAnalysis(model=MLP(30, 2, hidden=[4]), analysis=Recorder())
    with pytest.raises(RuntimeError) as error:
        _trainer().fit(task, datamodule=data)
    assert str(error.value) == (
        "task 'posthoc_analysis' does not train: run its stage with `phases: [test]` and load "
        "trained weights with `init: {stage: <training stage>}`"
    )


def test_collect_splits_concatenates_loader_batches_without_a_split_method(data):
    class LoadersOnly(L.LightningDataModule):
        def test_dataloader(self):
            return data.test_dataloader()

    splits = collect_splits(LoadersOnly(), ("test",))
    assert torch.equal(splits["test"]["x"], data.split("test")["x"])
    with pytest.raises(ValueError, match=r"^the data module has no 'train' split$"):
        collect_splits(LoadersOnly(), ("train",))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"likelihood": "poisson"}, "likelihood must be 'classification' or 'regression', got 'poisson'"),
    ],
    ids=["likelihood"],
)
def test_laplace_rescaling_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as error:
        LaplaceRescaling(**kwargs)
    assert str(error.value) == message


@pytest.mark.parametrize("arguments, problems", [
    ({"num_rescalings": 0, "log_std": 0.0, "sigma_noise": -1.0},
     {"num_rescalings": "must be >= 1, got integer 0", "log_std": "must be > 0, got number 0.0",
      "sigma_noise": "must be > 0, got number -1.0"}),
    ({"gammas": []}, {"gammas": "must have at least 1 item(s), got list []"}),
    ({"gammas": [-0.3, 0.5, 1.3]}, {}),  # the grid may run past the paper's family [0, 1]
    ({"num_rescalings": 1, "log_std": 1e-6, "gammas": [0.0, 1.0]}, {}),
])
def test_laplace_rescaling_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("analyses", "laplace_rescaling", **arguments) == problems


def test_builder_builds_the_nested_analysis_node():
    from framework.builder import Builder
    from framework.marked_yaml import Loaded

    node = {"type": "posthoc_analysis", "analysis": {"type": "laplace_rescaling", "num_rescalings": 3}}
    model = MLP(30, 2, hidden=[4])
    task = Builder(Loaded(data={})).node("tasks", node, ("task",), model=model)
    assert isinstance(task, PosthocAnalysis) and task.model is model
    assert isinstance(task.analysis, LaplaceRescaling) and task.analysis.num_rescalings == 3
