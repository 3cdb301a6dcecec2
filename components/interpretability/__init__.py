"""Interpretability family: surrogates that explain a trained model's decisions from its internals
(latent_debate: a debate over the layers of a causal LM on true/false statements)."""
