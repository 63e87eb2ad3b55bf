"""The steps of one verification run, each a module with one job, each reading and writing the
one run state (verifier/state.py). verifier/run.py lists them in the order they run."""
