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
