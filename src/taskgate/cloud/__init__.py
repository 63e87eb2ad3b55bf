"""The Lambda entry points of the cloud shape: each module here is one function's handler,
wrapped with logging, metrics and tracing, importing only what that function needs."""
