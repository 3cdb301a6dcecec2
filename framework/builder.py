"""Building: operative spec -> task (LightningModule), data module, callbacks, Trainer.

Nested nodes are built depth first, the terms of a weighted mapping as name -> (weight, built
term) (see `components.kinds.WeightedLosses`); optimizers and schedulers become factories
(functools.partial) the task calls with the runtime arguments. A failure keeps its exception type
and gains a note with the spec location, key path and component (`add_note`), so the CLI can show
a one-line error.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any

import registry
from framework.errors import Mark, Path, Problem, SpecError, format_path
from framework.marked_yaml import Loaded
from framework.schema import LiveSchemas
from framework.schema_paths import node_ref


@dataclass
class Built:
    task: Any
    data: Any
    callbacks: list[Any]
    trainer_kwargs: dict[str, Any]
    skipped_weights: list[str] = field(default_factory=list)  # init weights not loaded (strict: false)


class Builder:
    def __init__(self, loaded: Loaded, schemas: LiveSchemas | None = None) -> None:
        self.loaded = loaded
        self.schemas = schemas or LiveSchemas()

    def note(self, error: BaseException, path: Path, what: str) -> None:
        mark = self.loaded.key_mark(path) or Mark(self.loaded.source)
        error.add_note(f"{mark}: {format_path(path)}: while building {what}")

    def node(self, kind: str, node: dict[str, Any], path: Path, **runtime: Any) -> Any:
        reg = registry.KINDS[kind]
        name = node["type"]
        schema = self.schemas.component(kind, name)
        kwargs: dict[str, Any] = {}
        for key, value in node.items():
            if key == "type":
                continue
            nested = node_ref(schema["properties"].get(key, {}))
            if nested and value is not None:
                sub_kind, shape = nested
                if shape == "terms":  # name -> (weight, built term); see components.kinds.WeightedLosses
                    value = {name: (term["weight"], self.node(sub_kind, {k: v for k, v in term.items() if k != "weight"},
                                                              (*path, key, name)))
                             for name, term in value.items()}
                elif shape == "list":
                    value = [self.node(sub_kind, v, (*path, key, i)) for i, v in enumerate(value)]
                else:
                    value = self.node(sub_kind, value, (*path, key))
            kwargs[key] = value
        target = reg.load(name)
        if reg.factory:
            return functools.partial(target, **kwargs)
        try:
            return target(**kwargs, **runtime)
        except Exception as error:
            self.note(error, path, f"{reg.noun} '{name}'")
            raise

    def build(self, operative: dict[str, Any]) -> Built:
        data = self.node("data", operative["data"], ("data",)) if operative.get("data") else None
        model = self.node("models", operative["model"], ("model",)) if operative.get("model") else None
        if data is not None and model is not None:
            self.check_data(operative, data)
        metrics: dict[str, Any] = {}
        for i, node in enumerate(operative["metrics"]):
            if node["type"] in metrics:
                raise SpecError([Problem(self.loaded.key_mark(("metrics", i)), ("metrics", i),
                                         f"metric '{node['type']}' is listed twice")])
            metrics[node["type"]] = self.node("metrics", node, ("metrics", i))
        runtime: dict[str, Any] = {"model": model, "metrics": metrics}
        for field, kind in (("loss", "losses"), ("optimizer", "optimizers"), ("scheduler", "schedulers")):
            runtime[field] = self.node(kind, operative[field], (field,)) if operative.get(field) else None
        task_node = operative["task"]
        parameters = inspect.signature(registry.KINDS["tasks"].load(task_node["type"])).parameters
        missing = [k for k, p in parameters.items()
                   if k in runtime and runtime[k] is None and p.default is p.empty]
        if data is None and "fit" in operative["phases"]:
            missing.append("data")
        problems = [Problem(self.loaded.key_mark(("task",)), ("task",),
                            f"task '{task_node['type']}' needs a '{k}' section") for k in missing]
        problems += [Problem(self.loaded.key_mark((k,)), (k,),
                             f"task '{task_node['type']}' takes no '{k}'; remove the section")
                     for k in ("model", "loss", "optimizer", "scheduler") if runtime[k] is not None and k not in parameters]
        if problems:
            raise SpecError(problems)
        task = self.node("tasks", task_node, ("task",), **{k: v for k, v in runtime.items() if k in parameters})
        callbacks = [self.node("callbacks", n, ("callbacks", i)) for i, n in enumerate(operative["callbacks"])]
        return Built(task=task, data=data, callbacks=callbacks, trainer_kwargs=trainer_kwargs(operative))

    def check_data(self, operative: dict[str, Any], data: Any) -> None:
        """Sizes the data reports must match what the spec wrote (never filled in silently)."""
        info_fn = getattr(data, "info", None)
        if info_fn is None:
            return
        try:
            info = info_fn()
        except Exception as error:
            self.note(error, ("data",), f"data '{operative['data']['type']}'")
            raise
        model_args = operative["model"]
        problems = []
        for key in ("in_features", "in_channels"):
            if key in info and key in model_args and model_args[key] != info[key]:
                problems.append((key, f"is {model_args[key]} but the data has {key} = {info[key]}"))
        task_cls = registry.KINDS["tasks"].load(operative["task"]["type"])
        check = getattr(task_cls, "check_data", None)
        if check:
            problems += check(info, model_args)
        if problems:
            raise SpecError([
                Problem(self.loaded.value_mark(("model", key)), ("model", key), message)
                for key, message in problems
            ])


def trainer_kwargs(operative: dict[str, Any]) -> dict[str, Any]:
    """Lightning Trainer arguments from `hardware:` and `trainer:` (threads is ours, not Lightning's)."""
    hardware = {k: v for k, v in operative["hardware"].items() if k != "threads"}
    trainer = {k: v for k, v in operative["trainer"].items() if v is not None}
    return {**hardware, **trainer}
