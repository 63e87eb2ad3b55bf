"""`python -m taskgate.cli`: the same as the `taskgate` command."""

from taskgate.cli import main

raise SystemExit(main())
