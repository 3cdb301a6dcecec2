"""1-D periodic PDE families and latent generative solvers (lgs_pde): spectral solvers that generate
trajectories, a latent next-step transformer with a flow-matching or MSE head, and its rollout
evaluation."""
