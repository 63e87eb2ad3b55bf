"""taskgate: a task board and verification gate for fleets of AI coding agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("taskgate")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"
