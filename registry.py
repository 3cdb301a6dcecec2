"""The registry: the only place a spec's `type:` strings resolve.

Each **kind** of component (models, data, losses, ...) has one table mapping a snake_case name to a
lazy ``"module:attr"`` target; nothing is imported until a spec asks for that name, so this module
(and `exp validate`, `exp list`, `exp explain`) never imports torch. A target is a class or a
function whose typed signature is the component's schema.

Where entries come from, merged in this order (a name declared twice in one kind is an error that
names both places):

1. The core kinds below, each with its build contract (the table itself starts empty).
2. ``components/registry.py`` (the shared building blocks) and ``components/<family>/registry.py``
   for every family package, found on disk: a new paper adds its package and touches nothing here.
3. Installed plugins: a distribution that declares an entry point in the group
   ``expspec.components`` whose value is a module (``lab_models = "lab_models.expspec"``).

Every such module is data, not code that registers: it defines ``ENTRIES`` (kind -> name ->
"module:attr") and optionally ``KINDS`` (new kinds: kind -> {"noun", "contract", "runtime",
"factory", "in_specs"}), and must import nothing heavy (it is read by `exp validate`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import pkgutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

PLUGIN_GROUP = "expspec.components"


def close_matches(word: str, options: Iterable[str], n: int = 1) -> list[str]:
    """Options close to `word`, best first: the one rule behind every "Did you mean" of expspec.
    difflib's ratio, except that an option with exactly the word's letters (two swapped, `mpl` for
    `mlp`: the likeliest typo, which difflib ranks no better than one changed letter, `mup`) comes
    first."""
    found = difflib.get_close_matches(word, list(options), n=max(n, 5), cutoff=0.6)
    found.sort(key=lambda option: sorted(option) != sorted(word))  # stable: difflib's order otherwise
    return found[:n]


def did_you_mean(word: str, options: Iterable[str], otherwise: str = "") -> str:
    """`" Did you mean 'x'?"` for the option closest to `word`, else `otherwise`."""
    match = close_matches(word, options)
    return f" Did you mean '{match[0]}'?" if match else otherwise


def plural(noun: str) -> str:
    """'optimizer' -> 'optimizers', 'loss' -> 'losses', 'analysis' -> 'analyses'."""
    if noun.endswith("is"):
        return noun[:-2] + "es"
    return noun + ("es" if noun.endswith("s") else "s")


class UnknownComponent(KeyError):
    """A spec named a component that no table holds."""

    def __init__(self, noun: str, name: str, matches: list[str], known: list[str]) -> None:
        self.noun, self.name, self.matches, self.known = noun, name, matches, known
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = f"unknown {self.noun} '{self.name}'."
        if self.matches:
            return f"{text} Did you mean '{self.matches[0]}'?"
        return f"{text} Known {plural(self.noun)}: {', '.join(self.known)}."

    def __str__(self) -> str:
        return self.message


class Registry:
    """One kind's table: name -> lazy "module:attr" target, and where each entry was declared.

    Args:
        noun: What one entry is called in messages ("loss", "optimizer"); the kind itself is its
            key in `KINDS` ("losses").
        contract: How a component of this kind is built and called (shown by `exp list`).
        entries: name -> "module:attr".
        runtime: Parameters the builder supplies at build time; a spec may not set them.
        factory: Build a ``functools.partial`` the task calls with the runtime arguments, instead of
            an object (optimizers, schedulers).
        in_specs: Whether spec nodes name this kind (False for claim functions, which checks call).
    """

    def __init__(
        self,
        noun: str,
        contract: str = "",
        entries: Mapping[str, str] | None = None,
        runtime: tuple[str, ...] = (),
        factory: bool = False,
        in_specs: bool = True,
        origin: str = "registry.py",
    ) -> None:
        self.noun, self.contract, self.runtime, self.factory = noun, contract, tuple(runtime), factory
        self.in_specs, self.origin = in_specs, origin
        self._entries: dict[str, str] = {}
        self._origins: dict[str, str] = {}
        for name, target in (entries or {}).items():
            self.add(name, target, origin)

    def add(self, name: str, target: str, origin: str = "registry.py") -> None:
        """Register `name`; a second registration of the same name is an error naming both places."""
        if name in self._entries:
            raise ValueError(
                f"{self.noun} '{name}' is declared twice: {self._entries[name]} in {self._origins[name]}, "
                f"and {target} in {origin}; rename one of them"
            )
        if ":" not in target:
            raise ValueError(f"{self.noun} '{name}' in {origin}: target must be 'module:attr', got '{target}'")
        self._entries[name] = target
        self._origins[name] = origin

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def target(self, name: str) -> str:
        if name not in self._entries:
            known = self.names()
            raise UnknownComponent(self.noun, name, close_matches(name, known), known)
        return self._entries[name]

    def origin_of(self, name: str) -> str:
        """Where `name` was declared: "components.fairness", "plugin lab-models (lab_models.expspec)"."""
        self.target(name)
        return self._origins[name]

    def load(self, name: str) -> Any:
        """Import and return the class or function registered as `name`."""
        module, _, attr = self.target(name).partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


# The core kinds and their build contracts. Families and plugins add entries, and may add kinds.
KINDS: dict[str, Registry] = {
    "models": Registry("model", "Built with the spec's arguments; an nn.Module called as model(x) -> outputs."),
    "data": Registry("data module", (
        "A LightningDataModule built with the spec's arguments; batches are dicts of tensors ('x', 'y', "
        "and 'group' where the data has a sensitive attribute). `info()` reports the sizes the builder "
        "checks against the spec (in_features, in_channels, num_classes, num_targets).")),
    "losses": Registry("loss", (
        "An nn.Module built with the spec's arguments, called as loss(outputs, batch) -> scalar tensor; "
        "a weighted_sum's terms carry their weights.")),
    "optimizers": Registry("optimizer", "A factory: the task calls optimizer(params) -> torch.optim.Optimizer.",
                           runtime=("params",), factory=True),
    "schedulers": Registry("scheduler", (
        "A factory: the task calls scheduler(optimizer, total_steps) -> Lightning lr-scheduler config "
        "({'scheduler': ..., 'interval': 'step' | 'epoch'})."), runtime=("optimizer", "total_steps"), factory=True),
    "metrics": Registry("metric", (
        "A torchmetrics.Metric built with the spec's arguments; updated as metric.update(outputs, batch) "
        "and logged as '<split>/<name>'.")),
    "callbacks": Registry("callback", "A lightning.pytorch.Callback built with the spec's arguments."),
    "analyses": Registry("analysis", (
        "Called as analysis(model, splits) -> dict[str, float], where splits maps 'train'/'val'/'test' to "
        "that split's tensors as one batch dict; an attribute `splits` names the splits it needs "
        "(default train and test). The posthoc_analysis task logs 'test/<name>'.")),
    "tasks": Registry("task", (
        "A LightningModule built with the spec's `task:` arguments plus the built sections, passed as "
        "model=, loss=, optimizer= (factory), scheduler= (factory or None), metrics= (dict), each only if "
        "the task's signature names it; a spec section the task does not take is an error."),
        runtime=("model", "loss", "optimizer", "scheduler", "metrics")),
    "claim_functions": Registry("claim function", (
        "Called by a claims.yaml check with plain numbers and lists (a sweep's column or param values); "
        "returns a number or a boolean. Pure Python: evaluating claims never imports torch."),
        in_specs=False),
}


def _family_modules() -> list[tuple[str, ModuleType]]:
    """components/registry.py, then components/<family>/registry.py for every package on disk."""
    import components

    found = [("components", importlib.import_module("components.registry"))]
    for info in sorted(pkgutil.iter_modules(components.__path__), key=lambda i: i.name):
        name = f"components.{info.name}"
        if info.ispkg and (Path(info.module_finder.path) / info.name / "registry.py").is_file():
            found.append((name, importlib.import_module(f"{name}.registry")))
    return found


def _plugin_modules() -> list[tuple[str, ModuleType]]:
    """Modules named by installed distributions' `expspec.components` entry points."""
    found = []
    for point in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
        dist = point.dist.name if point.dist else point.name
        origin = f"plugin {dist} ({point.value})"
        try:
            module = point.load()
        except Exception as error:  # a broken plugin must say which one it is
            raise ImportError(f"{origin}: cannot load its registry module: {error}") from error
        if not isinstance(module, ModuleType):
            raise TypeError(f"{origin}: the entry point must name a module, got {type(module).__name__}")
        found.append((origin, module))
    return found


def _declare_kinds(origin: str, kinds: Mapping[str, Mapping[str, Any]]) -> None:
    allowed = {"noun", "contract", "runtime", "factory", "in_specs"}
    for kind, spec in kinds.items():
        if kind in KINDS:
            raise ValueError(f"kind '{kind}' is declared twice: in {KINDS[kind].origin} and in {origin}")
        unknown = set(spec) - allowed
        if unknown or "noun" not in spec:
            raise ValueError(f"{origin}: kind '{kind}' needs 'noun' and may have {sorted(allowed)}; "
                             f"got {sorted(spec)}")
        KINDS[kind] = Registry(spec["noun"], spec.get("contract", ""), runtime=tuple(spec.get("runtime", ())),
                               factory=spec.get("factory", False), in_specs=spec.get("in_specs", True),
                               origin=origin)


def _add_entries(origin: str, entries: Mapping[str, Mapping[str, str]]) -> None:
    for kind, table in entries.items():
        if kind not in KINDS:
            hint = did_you_mean(kind, KINDS, otherwise=f" Kinds: {', '.join(KINDS)}.")
            raise ValueError(f"{origin} declares entries of unknown kind '{kind}'.{hint}")
        for name, target in table.items():
            KINDS[kind].add(name, target, origin)


def _load_all() -> None:
    modules = _family_modules() + _plugin_modules()
    for origin, module in modules:  # kinds first: a family may add entries to another's kind
        _declare_kinds(origin, getattr(module, "KINDS", {}))
    for origin, module in modules:
        _add_entries(origin, getattr(module, "ENTRIES", {}))


_load_all()
