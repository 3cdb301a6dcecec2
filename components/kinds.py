"""Type aliases that mark a constructor argument as a nested component node.

``model: Model`` in a signature tells the schema (and `exp validate`) that the argument is a
component node resolved in the models kind, and tells the builder to build it before the call;
``metrics: list[Metric]`` is a list of such nodes.

``terms: WeightedLosses`` is a mapping of term name -> loss node in which each node may also carry
a ``weight`` (a number >= 0, default 1.0): the one place a spec writes a weight. The builder builds
each node without its weight and hands the constructor ``{name: (weight, built loss)}``.
"""

from typing import Annotated, Any


class Kind:
    """Annotation metadata: the registry kind (a key of `registry.KINDS`) a node resolves in.

    With ``weighted=True`` the argument is a mapping of named, weighted terms (see the module
    docstring); the names become key paths (``loss.terms.cvm.weight``) and logged metric names
    (``train/loss.cvm``), so they must match `TERM_NAME`.
    """

    TERM_NAME = r"^[a-z][a-z0-9_]*$"

    def __init__(self, kind: str, weighted: bool = False) -> None:
        self.kind = kind
        self.weighted = weighted

    def __repr__(self) -> str:
        return f"Kind({self.kind!r}, weighted=True)" if self.weighted else f"Kind({self.kind!r})"


Model = Annotated[Any, Kind("models")]
Loss = Annotated[Any, Kind("losses")]
# name -> (weight, loss); in a spec: name -> loss node with an optional `weight`.
WeightedLosses = Annotated[dict[str, tuple[float, Any]], Kind("losses", weighted=True)]
Metric = Annotated[Any, Kind("metrics")]
Callback = Annotated[Any, Kind("callbacks")]
