"""RunLogger (framework/mlflow_logger.py): metrics are queued and written at most every
`flush_seconds` and at finalize, with the keys, values and steps Lightning gave."""

from __future__ import annotations

from mlflow.tracking import MlflowClient

from framework.mlflow_logger import RunLogger


def _run(store: str) -> str:
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("logger-test") or client.get_experiment(client.create_experiment("logger-test"))
    return client.create_run(experiment.experiment_id).info.run_id


def _history(store: str, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in MlflowClient(store).get_metric_history(run_id, key)]


def test_metrics_wait_for_the_flush_interval_then_finalize_writes_them_all(tracked: str) -> None:
    run_id = _run(tracked)
    logger = RunLogger(tracking_uri=tracked, run_id=run_id, flush_seconds=3600)
    for step in range(3):
        logger.log_metrics({"train/loss": 1.0 / (step + 1), "epoch": 0}, step)
    logger.log_metrics({"val/acc:uracy": 0.75}, 2)  # Lightning's rule drops ':' from names
    assert _history(tracked, run_id, "train/loss") == []
    logger.finalize("success")
    assert _history(tracked, run_id, "train/loss") == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]
    assert _history(tracked, run_id, "val/accuracy") == [(2, 0.75)]
    assert _history(tracked, run_id, "epoch") == []  # a step axis Lightning adds, not a result
    assert MlflowClient(tracked).get_run(run_id).info.status == "RUNNING"  # the runner ends the run


def test_a_due_flush_writes_at_once(tracked: str) -> None:
    run_id = _run(tracked)
    logger = RunLogger(tracking_uri=tracked, run_id=run_id, flush_seconds=0)
    logger.log_metrics({"train/loss": 2.0}, 7)
    assert _history(tracked, run_id, "train/loss") == [(7, 2.0)]


def test_periodic_writes_are_asynchronous_and_wait_stores_them(tracked: str) -> None:
    run_id = _run(tracked)
    logger = RunLogger(tracking_uri=tracked, run_id=run_id, flush_seconds=3600)
    logger.log_metrics({"train/loss": 3.0}, 4)
    logger.flush()  # handed to MLflow's background writer
    assert len(logger._in_flight) == 1
    logger.wait()
    assert logger._in_flight == [] and _history(tracked, run_id, "train/loss") == [(4, 3.0)]


def test_writes_are_synchronous_when_asked_and_on_a_local_store(tracked: str) -> None:
    from framework.tracking import Tracker

    run_id = _run(tracked)
    logger = RunLogger(tracking_uri=tracked, run_id=run_id, flush_seconds=3600, asynchronous=False)
    logger.log_metrics({"train/loss": 5.0}, 1)
    logger.flush()
    assert logger._in_flight == [] and _history(tracked, run_id, "train/loss") == [(1, 5.0)]
    operative = {"paper": "logger-test", "name": "x", "tracking": {"uri": tracked, "log_checkpoints": False}}
    tracker = Tracker(operative, "spec.yaml", "0" * 16, [])
    tracker.run_id = run_id
    assert tracker.logger().asynchronous is False  # MLflow's queue would cost every run's end ~0.5 s
