"""`taskgate serve`: the cloud's Lambda handlers, run in one local process."""
