"""The REST routes, one module per area. Importing this package registers every route."""

from taskgate.api.routes import (  # noqa: F401  (imported for their registrations)
    attestations,
    decisions,
    docs,
    health,
    keys,
    me,
    metrics,
    projects,
    specs,
    tasks,
    verification,
    verifier,
)
