"""Pure rules of taskgate: models, the lifecycle table, permissions, error codes. No I/O."""
