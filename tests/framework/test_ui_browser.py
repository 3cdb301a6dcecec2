"""The MLflow UI as a reader sees it, driven in a real headless Chromium (Debian's `chromium` and
`chromium-driver`, through selenium): a small sweep whose trials were partly reused, a plain run,
`exp ui` started as a user starts it, and its printed links opened.

Screenshots go to $EXPSPEC_TEST_ARTIFACTS/ui (default: test-artifacts/ui in the repository);
docs/mlflow_runs_table.png in the README is one of them. Without Chromium, chromedriver or
selenium these tests skip, saying which is missing; `.ci/run` installs them and sets
EXPSPEC_CI=1, which turns that skip into a failure, so CI cannot pass without them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest


pytestmark = pytest.mark.xdist_group("mlflow_ui_browser")

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("EXPSPEC_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "ui"
GRID = [0.001, 0.01, 0.1]
WAIT = 90  # seconds a page may take on a loaded 2-core machine


def _missing() -> str | None:
    """What the browser tests lack on this machine, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).is_file():
            return f"{path} not found (apt-get install {package})"
    return None


def _require_browser() -> None:
    missing = _missing()
    if missing and os.environ.get("EXPSPEC_CI") == "1":
        pytest.fail(f"EXPSPEC_CI=1 (.ci/run) but {missing}")
    if missing:
        pytest.skip(missing)


SWEEP = """\
# ui-lr: the tiny CvM spec at three learning rates, shortened for the browser tests
extends: {tiny}
name: ui-lr
data: {{n_samples: 600}}
trainer: {{max_steps: 6}}
sweep:
  grid: {{optimizer.lr: {grid}}}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A store holding a plain run of tiny.yaml (another CvM weight), a plain run equal to one
    trial of a 3-trial learning-rate sweep (so that trial is reused and linked), and that sweep."""
    _require_browser()
    folder = tmp_path_factory.mktemp("ui")
    monkey = pytest.MonkeyPatch()
    store = f"sqlite:///{folder / 'mlflow.db'}"
    for key, value in (("MLFLOW_TRACKING_URI", store), ("EXPSPEC_RUNS_DIR", str(folder / "runs")),
                       ("EXPSPEC_CACHE_DIR", str(folder / "cache"))):
        monkey.setenv(key, value)
    monkey.chdir(folder)  # MLflow's artifacts (./mlruns) land here
    specs = folder / "specs"
    specs.mkdir()
    tiny = SPECS / "cvm_fairness" / "tiny.yaml"
    sweep = specs / "sweep.yaml"
    sweep.write_text(SWEEP.format(tiny=os.path.relpath(tiny, specs), grid=GRID))
    from framework.runner import run
    from framework.sweep import run_sweep

    plain = run(tiny, ["trainer.max_steps=6", "data.n_samples=600", "loss.terms.cvm.weight=3.0"])
    reused = run(sweep, ["optimizer.lr=0.01"])
    lines: list[str] = []
    result = run_sweep(sweep, jobs=2, echo=lines.append)
    try:
        yield {"store": store, "folder": folder, "plain": plain.run_id, "reused": reused.run_id,
               "parent": result.parent_run_id, "lines": lines}
    finally:
        monkey.undo()


@pytest.fixture(scope="module")
def ui(runs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`exp ui` on the store, as a user starts it; its links, read from what it prints. Stopped
    by process id with Ctrl-C's signal (then SIGKILL) whatever the tests did."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": runs["store"]}
    process = subprocess.Popen([sys.executable, "-m", "framework.cli", "ui"], cwd=runs["folder"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed = _read_links(process)
        links = [line.strip() for line in printed if line.strip().startswith("http")]
        yield {"process": process, "printed": printed, "runs_link": links[0], "compare_link": links[1],
               "base": printed[0].split(" at ")[1].split()[0]}
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _read_links(process: subprocess.Popen) -> list[str]:
    """The lines `exp ui` prints up to its last link (the compare link of the latest sweep)."""
    printed: list[str] = []
    deadline = time.monotonic() + 180
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("exp ui exited:\n" + "".join(printed))
        printed.append(line.rstrip("\n"))
        if "compare-runs" in line:
            return printed
    raise AssertionError("exp ui printed no compare link in 180 s:\n" + "\n".join(printed))


@pytest.fixture(scope="module")
def browser(ui: dict[str, Any]) -> Iterator[Any]:
    """Headless Chromium with MLflow's assistant panel closed (it is open on a first visit and
    would cover a third of the page); quit at the end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    # A laptop's screen (the 1366x768), MLflow's side panels as they open by default.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,768"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(ui["base"])
        driver.execute_script("window.localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false');"
                              "window.localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1', 'true')")
        yield driver
    finally:
        driver.quit()


ERROR_PANEL = "Something went wrong"


def _no_error_panel(driver: Any) -> None:
    """Scroll the page (and each scrolling pane) to its end, so that every lazily drawn section
    renders, then fail on MLflow's error panel anywhere on it."""
    for y in range(0, 6000, 600):
        driver.execute_script(
            "window.scrollTo(0, arguments[0]);"
            "document.querySelectorAll('*').forEach(e => { if (e.scrollHeight > e.clientHeight + 50) e.scrollTop = arguments[0]; });",
            y)
        time.sleep(0.5)
    time.sleep(2)
    text = driver.find_element("tag name", "body").text
    assert ERROR_PANEL not in text, f"{driver.current_url}: {text[max(0, text.index(ERROR_PANEL) - 300):][:600]}"
    driver.execute_script("window.scrollTo(0, 0);")


def _shot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def _wait(driver: Any, css: str, count: int = 1) -> list[Any]:
    """The elements matching `css` once there are at least `count` of them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count)
    return driver.find_elements(By.CSS_SELECTOR, css)


NAME_CELL = "[col-id='attributes.`Run Name`']"


def _names(driver: Any) -> list[str]:
    """The Run Name column, top to bottom (MLflow nests a child under its parent by placing it
    below, indented, in the same grid level)."""
    cells = driver.find_elements("css selector", f".ag-row {NAME_CELL}")
    rows = sorted((int(c.find_element("xpath", "..").get_attribute("row-index")), c.text) for c in cells)
    return [text.split("\n")[-1] for _, text in rows]


def _wait_text(driver: Any, *texts: str) -> str:
    """The page's text once it holds every one of `texts`."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: all(t in d.find_element("tag name", "body").text for t in texts))
    return driver.find_element("tag name", "body").text


def test_runs_link_opens_the_training_view_with_varied_params_and_test_metrics(browser: Any, ui: dict[str, Any]) -> None:
    browser.get(ui["runs_link"])
    _wait(browser, f".ag-row {NAME_CELL} a", 3)
    columns = [c.get_attribute("col-id") for c in browser.find_elements("css selector", ".ag-header-cell")]
    assert "params.`optimizer.lr`" in columns and "metrics.`test/accuracy`" in columns, columns
    assert "params.`name`" not in columns
    text = browser.find_element("tag name", "body").text
    from framework.tracking import readme_title

    assert readme_title(SPECS / "cvm_fairness" / "tiny.yaml") in text  # the experiment's description
    assert "Token Usage" not in text and "Observability" not in text  # not the GenAI overview and sidebar
    top = _names(browser)
    assert len(top) == 3 and len(set(top)) == len(top), top  # the sweep's parent, two plain runs
    # What was varied leads: right after the run's name and date, the swept param, then the
    # metrics, all within the window without scrolling.
    width = browser.execute_script("return window.innerWidth")
    shown = [c.get_attribute("col-id") for c in browser.find_elements("css selector", ".ag-header-cell")
             if 0 < c.rect["width"] and c.rect["x"] + c.rect["width"] <= width]
    assert shown.index("params.`optimizer.lr`") < shown.index("metrics.`test/accuracy`"), shown
    _no_error_panel(browser)
    _shot(browser, "runs_table_collapsed")


def test_sweep_children_nest_under_the_parent_with_every_grid_point(browser: Any, ui: dict[str, Any],
                                                                    runs: dict[str, Any]) -> None:
    browser.get(ui["runs_link"])
    _wait(browser, f".ag-row {NAME_CELL} a", 3)
    parent = browser.find_element("css selector", f".ag-row[row-id='{runs['parent']}'] {NAME_CELL} button")
    parent.click()  # the UI does not keep expanded rows in a saved view
    _wait(browser, f".ag-row {NAME_CELL} a", 3 + len(GRID))
    names = _names(browser)
    at = names.index("ui-lr sweep")
    children = names[at + 1 : at + 1 + len(GRID)]  # right below their parent
    assert sorted(children) == sorted(f"lr={lr}" for lr in GRID), names
    assert all(len(name) <= 15 for name in children)  # what the Run Name column shows uncut
    assert any("linked into this sweep" in line for line in runs["lines"]), runs["lines"]
    path = _shot(browser, "runs_table")
    assert path.stat().st_size > 20_000  # a rendered page, not a blank one


def test_compare_view_of_a_sweep_and_a_plain_run_lists_the_varied_param_not_name(
        browser: Any, ui: dict[str, Any], runs: dict[str, Any]) -> None:
    from mlflow.tracking import MlflowClient

    from framework.ui import compare_link

    client = MlflowClient(tracking_uri=runs["store"])
    children = client.search_runs([client.get_run(runs["parent"]).info.experiment_id],
                                  f"tags.`mlflow.parentRunId` = '{runs['parent']}'")
    ids = [r.info.run_id for r in children] + [runs["plain"]]
    browser.get(compare_link(ui["base"], children[0].info.experiment_id, ids))
    text = _wait_text(browser, "Comparing 4 Runs from 1 Experiment", "Show diff only")
    params = {line.split(" ")[0] for line in text.splitlines()}  # a param's row: `key value value ...`
    assert {"optimizer.lr", "loss.terms.cvm.weight"} <= params, sorted(params)
    assert not {"name", "description", "sweep"} & params
    _no_error_panel(browser)  # the Artifacts section included, at the page's end
    _shot(browser, "compare_view")


def test_printed_compare_link_opens_the_latest_sweep(browser: Any, ui: dict[str, Any]) -> None:
    browser.get(ui["compare_link"])
    text = _wait_text(browser, f"Comparing {len(GRID)} Runs from 1 Experiment", "Show diff only")
    assert any(line.startswith("optimizer.lr 0.") for line in text.splitlines())
    assert "Observability" not in text  # the training view's sidebar (Runs, Models), not the GenAI one
    _no_error_panel(browser)


@pytest.mark.parametrize("page", ["", "/artifacts"], ids=["overview", "artifacts"])
def test_run_pages_render_without_an_error_panel(browser: Any, ui: dict[str, Any], runs: dict[str, Any],
                                                 page: str) -> None:
    """A run's pages, reached from the table: its overview (params, metrics) and its artifacts."""
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=runs["store"]).get_run(runs["plain"])
    browser.get(f"{ui['base']}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}{page}")
    _wait_text(browser, run.info.run_name)
    _no_error_panel(browser)
    assert "epoch" not in {m for m in run.data.metrics}  # a step axis, not a metric (framework/mlflow_logger.py)
    _shot(browser, f"run_page{page.replace('/', '_')}")


def test_ctrl_c_stops_exp_ui_and_its_server(ui: dict[str, Any]) -> None:
    """Last in this module: it ends the `ui` fixture's process."""
    process = ui["process"]
    process.send_signal(signal.SIGINT)
    assert process.wait(30) == 0
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{ui['base']}/health", timeout=5)

