"""The attestation key: a port (port.py) with two adapters, like the store: a local Ed25519 key
in the data dir (local.py), an AWS KMS key (kms.py)."""
