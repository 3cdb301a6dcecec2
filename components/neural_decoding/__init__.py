"""Neural decoding with unpaired behaviour (beemo): simulated multi-session reaches, a behaviour
decoder with neural cross-attention, and the mixed paired/unpaired training task."""
