"""components/causal/scm.py: execution, interventions, abduction and depth of the simulators."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from components.causal.scm import SCM, random_scm, render_code, render_text, unit_equations

UNIFORM = (1 / 3, 1 / 3, 1 / 3)


def chain() -> SCM:
    """A -> B -> C and A -> C: B = A + 1 + U_B, C = A + B + 2 + U_C (mod 3)."""
    return SCM(parents=((), (0,), (0, 1)), offsets=(0, 1, 2), noise=((0.5, 0.25, 0.25), UNIFORM, (1.0, 0.0, 0.0)),
               num_values=3, names=("A", "B", "C"))


def test_evaluate_by_hand() -> None:
    scm = chain()
    # u = (2, 0, 0): A = 2, B = 2 + 1 = 0, C = 2 + 0 + 2 = 1 (mod 3)
    assert scm.evaluate(np.array([2, 0, 0])).tolist() == [2, 0, 1]
    # do(B = 2): A = 2, B = 2, C = 2 + 2 + 2 = 0
    assert scm.evaluate(np.array([2, 0, 0]), {1: 2}).tolist() == [2, 2, 0]
    assert scm.run_unit([2, 0, 0], {1: 2}) == [2, 2, 0]


def test_interventional_distribution_by_hand() -> None:
    # do(B = 1): C = A + 1 + 2 + 0 = A (U_C is 0 surely), so P(C | do(B=1)) = P(A) = P(U_A)
    assert chain().interventional(2, {1: 1}) == pytest.approx([0.5, 0.25, 0.25], abs=1e-12)
    # do(A = 0): B = 1 + U_B is uniform
    assert chain().interventional(1, {0: 0}) == pytest.approx(UNIFORM, abs=1e-12)


def test_do_answers_match_monte_carlo_on_200_random_scms() -> None:
    rng, draws = random.Random(0), np.random.default_rng(0)
    for _ in range(200):
        scm = random_scm(rng, rng.randint(2, 5))
        node, value, target = rng.randrange(scm.num_nodes), rng.randrange(3), rng.randrange(scm.num_nodes)
        exact = scm.interventional(target, {node: value})
        estimate = np.bincount(scm.sample(draws, 4000, {node: value})[:, target], minlength=3) / 4000
        assert exact.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.abs(estimate - exact).max() < 0.04  # 4000 draws: standard error <= 0.008


def test_counterfactuals_are_consistent_on_200_random_scms() -> None:
    rng, draws = random.Random(1), np.random.default_rng(1)
    for _ in range(200):
        scm = random_scm(rng, rng.randint(2, 5))
        u = scm.sample_noise(draws, 1)[0]
        x = scm.evaluate(u)
        assert scm.abduct(x).tolist() == u.tolist()  # abduction recovers the unit
        node = rng.randrange(scm.num_nodes)
        # composition: setting a node to its factual value changes nothing
        assert scm.counterfactual(x, {node: int(x[node])}).tolist() == x.tolist()
        # the counterfactual is the unit's own world under the intervention, and the fast path agrees
        value = rng.randrange(3)
        assert scm.counterfactual(x, {node: value}).tolist() == scm.run_unit(u.tolist(), {node: value})
        # nodes that are not descendants of the set node keep their factual values
        after = scm.counterfactual(x, {node: value})
        for i in range(scm.num_nodes):
            if not descends(scm, i, node):
                assert after[i] == x[i]


def descends(scm: SCM, i: int, node: int) -> bool:
    return i == node or any(descends(scm, j, node) for j in scm.parents[i])


def test_depth_counts_mechanisms_in_the_intervened_graph() -> None:
    scm = chain()
    assert scm.depths() == [0, 1, 2]
    assert scm.depths({1: 0}) == [0, 0, 1]  # do(B) cuts A -> B
    assert scm.depths({0: 0}) == [0, 1, 2]  # a root set stays depth 0
    assert scm.depth(2, {1: 0}) == 1


def test_random_scms_are_dags_with_distinct_names() -> None:
    rng = random.Random(2)
    for n, m in itertools.product(range(1, 8), (2, 3, 5)):
        scm = random_scm(rng, n, num_values=m, max_parents=2)
        assert scm.parents[0] == () and all(len(p) <= 2 and all(j < i for j in p) for i, p in enumerate(scm.parents))
        assert len(set(scm.names)) == n and all(abs(sum(p) - 1) < 1e-12 for p in scm.noise)


def test_renderings_state_the_unit_equations() -> None:
    scm, u = chain(), [2, 0, 0]
    equations = unit_equations(scm, u)
    assert equations == [(0, (), 2), (1, (0,), 1), (2, (0, 1), 2)]
    assert render_code(scm, equations, (1, 2), 2) == "A=2;B=A+1;C=A+B+2;do(B=2);C?"
    assert render_text(scm, equations, (1, 2), 2) == (
        "A is 2. B is A plus 1, modulo 3. C is A plus B plus 2, modulo 3. "
        "Suppose B is set to 2 by an intervention. What is C? Answer:")


@pytest.mark.parametrize("kwargs, message", [
    ({"parents": ((), (1,))}, "the parents of node 1 must be distinct nodes before it"),
    ({"noise": (UNIFORM, (0.5, 0.5, 0.5))}, "noise\\[1\\] must be a distribution over 3 values"),
    ({"num_values": 1}, "num_values must be >= 2"),
])
def test_bad_structures_are_rejected(kwargs: dict, message: str) -> None:
    base = dict(parents=((), (0,)), offsets=(0, 0), noise=(UNIFORM, UNIFORM), num_values=3, names=("A", "B"))
    with pytest.raises(ValueError, match=message):
        SCM(**{**base, **kwargs})
