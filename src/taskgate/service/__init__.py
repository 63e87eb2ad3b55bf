"""Use cases: load -> decide (domain) -> commit one atomic change (store)."""
