"""The REST routes, one module per area. Importing this package registers every route."""

from taskgate.api.routes import (  # noqa: F401  (imported for their registrations)
    docs,
    health,
    keys,
    metrics,
    projects,
    specs,
    tasks,
    verification,
    verifier,
)
