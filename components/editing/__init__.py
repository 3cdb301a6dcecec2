"""Minimal-change image editing (minchange_edit): procedural shapes with factors, an oracle factor
classifier, a latent edit policy trained by group-normalised policy gradient against edit rewards."""
