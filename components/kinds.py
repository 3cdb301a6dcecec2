"""Type aliases that mark a constructor argument as a nested component node.

``terms: list[Loss]`` in a signature tells the schema (and `exp validate`) that each item is a
component node resolved in the losses table, and tells the builder to build it before the call.
"""

from typing import Annotated, Any


class Kind:
    """Annotation metadata: the registry table (a key of `registry.KINDS`) a node resolves in."""

    def __init__(self, table: str) -> None:
        self.table = table

    def __repr__(self) -> str:
        return f"Kind({self.table!r})"


Model = Annotated[Any, Kind("models")]
Loss = Annotated[Any, Kind("losses")]
Metric = Annotated[Any, Kind("metrics")]
Callback = Annotated[Any, Kind("callbacks")]
