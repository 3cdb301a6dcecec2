"""What each `exp` command does, one module per group: specs.py (validate, show), runs.py (run,
sweep, reproduce, resume, rerun), components.py (list, explain, schema); compare and ui live in
framework/compare/ and framework/ui.py. framework/cli.py parses the command line and calls them."""


EXIT_FAILED, EXIT_SPEC = 1, 2  # a run or check failed; a spec error or another mistake in what was asked
