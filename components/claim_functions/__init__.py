"""Functions a claims.yaml check may call (the `claim_functions` kind): plain Python, no torch."""
