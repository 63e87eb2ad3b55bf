"""Handlers of the scheduled (non-HTTP) Lambda functions."""
