"""Principals from credentials: key minting, hashing, token checks."""
