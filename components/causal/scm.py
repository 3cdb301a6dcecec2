"""Executable structural causal models (SCMs) over values mod m, the simulators of causim
(CauSim, Astorga, Kriz & van der Schaar, NeurIPS 2026; specs/causim/README.md).

An SCM has nodes 0..n-1 in topological order (a node's parents come before it). Node i takes the
value X_i = (sum of its parents' values + offset_i + U_i) mod m, with exogenous noise U_i drawn
from its own distribution `noise[i]` over 0..m-1; a root has no parents. Everything is exact by
execution:

- `evaluate(u, do)`: the values of a unit u (exogenous values) in the world where the nodes of
  `do` are set (Pearl's do: the mechanism of a set node is replaced by the constant).
- `interventional(target, do)`: P(X_target | do) by enumerating every exogenous setting (m^n of
  them) with its probability; `sample(rng, count, do)` draws from the same distribution.
- `abduct(x)`: the exogenous values of a fully observed unit (the mechanisms are invertible in
  U_i), so `counterfactual(x, do) = evaluate(abduct(x), do)` (abduction, action, prediction).
- `depth(target, do)`: sequential mechanism applications needed to compute the target in the
  intervened graph: 0 for a root or a set node, else 1 + the largest depth among its parents.
- `run_unit(u, do)` and `draw_unit(rng)`: one unit in plain Python, the data generator's fast path.

`random_scm` draws a structure (the simulator's complexity is its number of nodes), `unit_equations`
writes one unit's deterministic equations (the noise folded into each constant), which
`render_code` and `render_text` turn into a prompt: the executable (code) and the natural-language
rendering of the same query.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np

NAMES = "ABCDEFGHJK"  # variable names a rendering may use (I is left out: it reads as 1)


@dataclass(frozen=True)
class SCM:
    """An additive SCM mod `num_values` (module docstring); nodes in topological order.

    Args:
        parents: parents[i], the parents of node i, each < i.
        offsets: offset_i in 0..num_values-1.
        noise: noise[i], the distribution of U_i over 0..num_values-1 (sums to 1).
        num_values: m, the size of every node's domain.
        names: A display name per node.
    """

    parents: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    noise: tuple[tuple[float, ...], ...]
    num_values: int
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        n, m = len(self.parents), self.num_values
        if m < 2:
            raise ValueError(f"num_values must be >= 2, got {m}")
        if not (len(self.offsets) == len(self.noise) == len(self.names) == n):
            raise ValueError(f"parents, offsets, noise and names need one entry per node ({n})")
        for i, pa in enumerate(self.parents):
            if any(not 0 <= j < i for j in pa) or len(set(pa)) != len(pa):
                raise ValueError(f"the parents of node {i} must be distinct nodes before it, got {pa}")
        for i, p in enumerate(self.noise):
            if len(p) != m or min(p) < 0 or abs(sum(p) - 1) > 1e-9:
                raise ValueError(f"noise[{i}] must be a distribution over {m} values, got {p}")

    @property
    def num_nodes(self) -> int:
        return len(self.parents)

    def evaluate(self, u: np.ndarray, do: dict[int, int] | None = None) -> np.ndarray:
        """Values (N, n) of the units u (N, n) (or (n,) -> (n,)) in the world with `do` set."""
        do = do or {}
        u = np.asarray(u, dtype=np.int64)
        x = np.zeros_like(u)
        for i, pa in enumerate(self.parents):
            if i in do:
                x[..., i] = do[i]
            else:
                total = sum((x[..., j] for j in pa), np.zeros_like(u[..., i]))
                x[..., i] = (total + self.offsets[i] + u[..., i]) % self.num_values
        return x

    def abduct(self, x: np.ndarray) -> np.ndarray:
        """The exogenous values u with evaluate(u) == x (no intervention): U_i = X_i - sum of
        parents - offset_i mod m."""
        x = np.asarray(x, dtype=np.int64)
        u = np.zeros_like(x)
        for i, pa in enumerate(self.parents):
            total = sum((x[..., j] for j in pa), np.zeros_like(x[..., i]))
            u[..., i] = (x[..., i] - total - self.offsets[i]) % self.num_values
        return u

    def counterfactual(self, x: np.ndarray, do: dict[int, int]) -> np.ndarray:
        """The values the observed units x would have had under `do`: abduction, action, prediction."""
        return self.evaluate(self.abduct(x), do)

    def sample_noise(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """count exogenous settings (count, n), U_i ~ noise[i] independently."""
        m = self.num_values
        return np.stack([rng.choice(m, size=count, p=p) for p in self.noise], axis=1)

    def sample(self, rng: np.random.Generator, count: int, do: dict[int, int] | None = None) -> np.ndarray:
        """count draws (count, n) of the endogenous values under `do`."""
        return self.evaluate(self.sample_noise(rng, count), do)

    def interventional(self, target: int, do: dict[int, int] | None = None) -> np.ndarray:
        """P(X_target = v | do) for v in 0..m-1, exactly: the sum over all m^n exogenous settings."""
        m = self.num_values
        settings = np.array(list(itertools.product(range(m), repeat=self.num_nodes)), dtype=np.int64)
        weights = np.prod([np.asarray(self.noise[i])[settings[:, i]] for i in range(self.num_nodes)], axis=0)
        values = self.evaluate(settings, do)[:, target]
        return np.bincount(values, weights=weights, minlength=m)

    def depths(self, do: dict[int, int] | None = None) -> list[int]:
        """Each node's depth with `do` set: mechanism applications needed to compute it (module
        docstring), in one pass in topological order."""
        hops: list[int] = []
        for i, pa in enumerate(self.parents):
            hops.append(0 if (do and i in do) or not pa else 1 + max(hops[j] for j in pa))
        return hops

    def depth(self, target: int, do: dict[int, int] | None = None) -> int:
        """The depth of `target` with `do` set (`depths`)."""
        return self.depths(do)[target]

    def needed(self, target: int, do: dict[int, int] | None = None) -> list[int]:
        """The nodes whose values computing `target` with `do` set reads, itself included, in
        topological order: its ancestors in the intervened graph (a set node has no parents)."""
        keep, stack = {target}, [target]
        while stack:
            node = stack.pop()
            for j in () if do and node in do else self.parents[node]:
                if j not in keep:
                    keep.add(j), stack.append(j)
        return sorted(keep)

    def run_unit(self, u: list[int], do: dict[int, int] | None = None) -> list[int]:
        """`evaluate` for one unit in plain Python (the query generator's fast path; equal to
        evaluate(u, do), which a test checks)."""
        x: list[int] = []
        for i, pa in enumerate(self.parents):
            x.append(do[i] if do and i in do else (sum(x[j] for j in pa) + self.offsets[i] + u[i]) % self.num_values)
        return x

    def draw_unit(self, rng: random.Random) -> list[int]:
        """One unit's exogenous values, U_i ~ noise[i], drawn with Python's generator."""
        return [rng.choices(range(self.num_values), weights=p)[0] for p in self.noise]

def random_scm(rng: random.Random, num_nodes: int, num_values: int = 3, max_parents: int = 2,
               root_prob: float = 0.2) -> SCM:
    """A random SCM: node 0 is a root; each later node is a root with probability root_prob, else
    has 1..min(max_parents, i) parents drawn uniformly among the earlier nodes. Offsets are uniform,
    noise distributions Dirichlet(1), and the names a random choice of `num_nodes` letters of NAMES.
    Python's generator (not numpy's): a data set draws thousands of these tiny structures."""
    if not 1 <= num_nodes <= len(NAMES):
        raise ValueError(f"num_nodes must be in [1, {len(NAMES)}], got {num_nodes}")
    parents: list[tuple[int, ...]] = [()]
    for i in range(1, num_nodes):
        if rng.random() < root_prob:
            parents.append(())
            continue
        count = rng.randint(1, min(max_parents, i))
        parents.append(tuple(sorted(rng.sample(range(i), count))))
    offsets = tuple(rng.randrange(num_values) for _ in range(num_nodes))
    noise = []
    for _ in range(num_nodes):
        g = [rng.expovariate(1.0) for _ in range(num_values)]  # Dirichlet(1) = normalized Exp(1) draws
        noise.append(tuple(v / sum(g) for v in g))
    names = tuple(rng.sample(NAMES, num_nodes))
    return SCM(tuple(parents), offsets, tuple(noise), num_values, names)

def unit_equations(scm: SCM, u: list[int]) -> list[tuple[int, tuple[int, ...], int]]:
    """One unit's deterministic equations, in topological order: (node, parents, constant), meaning
    X_node = (sum of parents + constant) mod m, with constant = offset + U_node (a root's constant
    is its value). Executing them gives evaluate(u)."""
    return [(i, pa, (scm.offsets[i] + u[i]) % scm.num_values) for i, pa in enumerate(scm.parents)]


def render_code(scm: SCM, equations: list[tuple[int, tuple[int, ...], int]], do: tuple[int, int], target: int) -> str:
    """The executable rendering: 'A=2;C=A+1;B=C+A+0;do(C=0);B?' (arithmetic mod m implied)."""
    lines = [scm.names[i] + "=" + "+".join([scm.names[j] for j in pa] + [str(c)]) for i, pa, c in equations]
    return ";".join(lines) + f";do({scm.names[do[0]]}={do[1]});{scm.names[target]}?"


def render_text(scm: SCM, equations: list[tuple[int, tuple[int, ...], int]], do: tuple[int, int], target: int) -> str:
    """The natural-language rendering of the same query (what an LLM is asked at paper scale)."""
    m = scm.num_values
    lines = []
    for i, pa, c in equations:
        if pa:
            terms = " plus ".join([scm.names[j] for j in pa] + [str(c)])
            lines.append(f"{scm.names[i]} is {terms}, modulo {m}.")
        else:
            lines.append(f"{scm.names[i]} is {c}.")
    return (" ".join(lines) + f" Suppose {scm.names[do[0]]} is set to {do[1]} by an intervention. "
            f"What is {scm.names[target]}? Answer:")
