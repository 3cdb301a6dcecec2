import io

import pytest
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar

from components.callbacks.progress import progress_bar


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_tqdm_when_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    bar = progress_bar(refresh_rate=5)
    assert type(bar) is TQDMProgressBar
    assert bar.refresh_rate == 5


def test_rich_on_a_terminal(monkeypatch):
    pytest.importorskip("rich")
    monkeypatch.setattr("sys.stderr", FakeTerminal())
    bar = progress_bar(refresh_rate=2)
    assert isinstance(bar, RichProgressBar)
    assert bar.refresh_rate == 2


def test_tqdm_on_a_terminal_without_rich(monkeypatch):
    monkeypatch.setattr("sys.stderr", FakeTerminal())
    monkeypatch.setitem(__import__("sys").modules, "rich", None)  # makes `import rich` fail
    assert type(progress_bar()) is TQDMProgressBar


def test_negative_refresh_rate(argument_problems):
    assert argument_problems("callbacks", "progress_bar", refresh_rate=-1) == {
        "refresh_rate": "must be >= 0, got integer -1"}
    assert argument_problems("callbacks", "progress_bar", refresh_rate=0) == {}


def test_lines_when_not_a_terminal(monkeypatch, capsys):
    """Without a terminal a fit prints about `every` plain lines: step of steps, epoch, train/loss."""
    import lightning as L
    import torch

    from components.callbacks.progress import ProgressLines

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch[0]).pow(2).mean()
            self.log("train/loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(8, 2)), batch_size=2)
    trainer = L.Trainer(max_steps=10, callbacks=[ProgressLines(every=5)], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, log_every_n_steps=1)
    trainer.fit(Tiny(), data)
    lines = capsys.readouterr().err.splitlines()
    steps = [line.split()[:4] for line in lines if line.startswith("step ")]
    assert steps == [["step", "2/10", "(20%)", "epoch"], ["step", "4/10", "(40%)", "epoch"], ["step", "6/10", "(60%)", "epoch"],
                     ["step", "8/10", "(80%)", "epoch"], ["step", "10/10", "(100%)", "epoch"]]
    assert all("train/loss=" in line for line in lines if line.startswith("step "))
