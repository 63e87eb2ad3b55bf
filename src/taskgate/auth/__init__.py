"""Who is calling, from an HTTP request: a Bearer key, the local admin token, or JWT claims.

Key lookup, minting and hashing belong to the services (service/keys.py, service/secrets.py):
auth/ depends on service/, never the reverse.
"""
