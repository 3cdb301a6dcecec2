"""The `rl` family: environments on the gymnasium API, rollouts inside Lightning's training loop,
on-policy policy gradient (REINFORCE, PPO), behaviour cloning and learned dense rewards
(docs: /work/notes/s41/rl_interface.md; tasks.py's module docstring)."""
