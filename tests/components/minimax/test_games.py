"""components/minimax/games.py: exact gaps, projections, the noisy oracle, seeded construction."""

from __future__ import annotations

import itertools

import pytest
import torch

from components.minimax.games import BilinearGame, QuadraticGame, project_ball, project_box, project_simplex

GAMES = {
    "bilinear_box": lambda **k: BilinearGame(4, constraint="box", saddle_radius=0.5, **k),
    "bilinear_box_3x5": lambda **k: BilinearGame(3, dim_y=5, constraint="box", radius=2.0, saddle_radius=0.3, **k),
    "bilinear_ball": lambda **k: BilinearGame(4, constraint="ball", saddle_radius=0.5, **k),
    "bilinear_simplex": lambda **k: BilinearGame(4, dim_y=6, constraint="simplex", saddle_radius=0.5, **k),
    "quadratic": lambda **k: QuadraticGame(4, saddle_radius=0.5, **k),
}


@pytest.mark.parametrize("name", GAMES)
def test_gap_is_zero_at_the_saddle_and_positive_elsewhere(name: str) -> None:
    game = GAMES[name](seed=3)
    x_star, y_star = game.saddle
    assert abs(float(game.gap(x_star, y_star))) < 1e-12
    x, y = game.sample((200,), torch.Generator().manual_seed(0))
    assert bool((game.gap(x, y) > 1e-6).all())
    # the planted point is a saddle: no feasible deviation of one player improves its side
    assert bool((game(x_star.expand_as(x), y) <= game(x_star, y_star) + 1e-12).all())
    assert bool((game(x, y_star.expand_as(y)) >= game(x_star, y_star) - 1e-12).all())


def test_box_gap_matches_brute_force_over_vertices() -> None:
    """On a box a linear function is maximized at a vertex: enumerate them."""
    game = BilinearGame(3, dim_y=4, constraint="box", radius=1.5, saddle_radius=0.4, seed=1)
    x, y = game.sample((5,), torch.Generator().manual_seed(1))
    vx = 1.5 * torch.tensor(list(itertools.product([-1.0, 1.0], repeat=3)), dtype=torch.float64)
    vy = 1.5 * torch.tensor(list(itertools.product([-1.0, 1.0], repeat=4)), dtype=torch.float64)
    for xi, yi in zip(x, y):
        best_y = game(xi.expand(len(vy), -1), vy).max()
        best_x = game(vx, yi.expand(len(vx), -1)).min()
        assert float(game.gap(xi, yi)) == pytest.approx(float(best_y - best_x), abs=1e-12)


def test_quadratic_gap_matches_a_grid_search() -> None:
    game = QuadraticGame(2, curvature=1.5, curved_fraction=0.5, saddle_radius=0.5, seed=2)
    x, y = game.sample((3,), torch.Generator().manual_seed(2))
    grid = torch.linspace(-1, 1, 401, dtype=torch.float64)
    points = torch.cartesian_prod(grid, grid)
    for xi, yi in zip(x, y):
        best_y = game(xi.expand(len(points), -1), points).max()
        best_x = game(points, yi.expand(len(points), -1)).min()
        assert float(game.gap(xi, yi)) == pytest.approx(float(best_y - best_x), abs=1e-4)


def test_centered_box_gap_is_the_l1_formula_of_the_notes() -> None:
    game = BilinearGame(5, saddle_radius=0.0, radius=1.0)
    x, y = game.sample((4,), torch.Generator().manual_seed(0))
    expected = (x @ game.A).abs().sum(-1) + (y @ game.A.T).abs().sum(-1)
    torch.testing.assert_close(game.gap(x, y), expected)


def test_matrix_has_unit_operator_norm_and_the_requested_conditioning() -> None:
    game = BilinearGame(6, min_singular_value=0.2)
    s = torch.linalg.svdvals(game.A)
    assert float(s[0]) == pytest.approx(1.0) and float(s[-1]) == pytest.approx(0.2)


def test_projections() -> None:
    v = torch.randn(500, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2
    box = project_box(v, 0.5)
    assert float(box.abs().max()) <= 0.5 and torch.equal(project_box(box, 0.5), box)
    ball = project_ball(v, 1.5)
    assert float(ball.norm(dim=-1).max()) <= 1.5 + 1e-12
    inside = v[v.norm(dim=-1) <= 1.5]
    torch.testing.assert_close(project_ball(inside, 1.5), inside)
    p = project_simplex(v)
    assert float(p.min()) >= 0 and torch.allclose(p.sum(-1), torch.ones(500, dtype=torch.float64))
    torch.testing.assert_close(project_simplex(p), p)
    # optimality (variational inequality): <v - p, q - p> <= 0 for every q in the simplex
    q = torch.distributions.Dirichlet(torch.ones(7, dtype=torch.float64)).sample((500,))
    assert float(((v - p) * (q - p)).sum(-1).max()) <= 1e-12
    assert torch.equal(project_simplex(torch.tensor([0.5, 0.2, 2.0])), torch.tensor([0.0, 0.0, 1.0]))


@pytest.mark.parametrize("name", ["bilinear_box", "quadratic"])
def test_oracle_is_unbiased_with_std_sigma(name: str) -> None:
    game = GAMES[name](sigma=0.7)
    x, y = game.sample((1,), torch.Generator().manual_seed(0))
    n = 20000
    gx, gy = game.grad(x.expand(n, -1), y.expand(n, -1), torch.Generator().manual_seed(1))
    ex, ey = game.exact_grad(x, y)
    for noisy, exact in ((gx, ex), (gy, ey)):
        noise = noisy - exact
        assert float(noise.mean(0).abs().max()) < 4 * 0.7 / n**0.5
        assert noise.std(0).tolist() == pytest.approx([0.7] * noise.shape[1], rel=0.03)
    assert torch.equal(GAMES[name](sigma=0.0).grad(x, y)[0], ex)


def test_construction_is_seeded() -> None:
    assert torch.equal(BilinearGame(5, seed=4).A, BilinearGame(5, seed=4).A)
    assert not torch.equal(BilinearGame(5, seed=4).A, BilinearGame(5, seed=5).A)
    assert BilinearGame(5).A.dtype == torch.float64


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BilinearGame(3, constraint="cube"), "constraint must be one of 'box', 'simplex', 'ball', got 'cube'"),
    ],
)
def test_bad_arguments(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=f"^{message}$"):
        make()


@pytest.mark.parametrize("name, arguments, problems", [
    ("bilinear_game", {"dim": 0, "sigma": -1.0}, {"dim": "must be >= 1, got integer 0", "sigma": "must be >= 0, got number -1.0"}),
    ("bilinear_game", {"saddle_radius": 1.0, "min_singular_value": 0.0},
     {"saddle_radius": "must be >= 0 and < 1, got number 1.0", "min_singular_value": "must be > 0 and <= 1, got number 0.0"}),
    ("quadratic_bilinear_game", {"curvature": -0.5, "curved_fraction": 1.5},
     {"curvature": "must be >= 0, got number -0.5", "curved_fraction": "must be >= 0 and <= 1, got number 1.5"}),
    ("quadratic_bilinear_game", {"dim": 1, "curvature": 0.0, "curved_fraction": 1.0, "min_singular_value": 1.0}, {}),
])
def test_argument_ranges(argument_problems, name: str, arguments: dict, problems: dict) -> None:  # type: ignore[no-untyped-def]
    assert argument_problems("problems", name, **arguments) == problems
