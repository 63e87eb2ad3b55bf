"""Reading the locks scripts/lock.sh writes (requirements/*.txt, in uv's `pip compile` format):
each pin with its environment marker, and what each pinned package was pulled in by."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "requirements" / "runtime.txt"
DEV = ROOT / "requirements" / "dev.txt"
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)(?: ; ([^\\]+))?")
# "    # via pydantic", or "    # via" and then one "    #   name" a line ("-c file" for a constraint)
_VIA = re.compile(r"^\s+#\s+(?:via\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s|$)")


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str
    marker: Marker | None
    via: frozenset[str]  # canonical names of what pulled it in ("taskgate" for pyproject.toml)

    def holds(self, env: dict[str, str] | None) -> bool:
        return env is None or self.marker is None or self.marker.evaluate(env)


def entries(lock: Path) -> list[Pin]:
    """Every pin of the lock, in order; a package may appear twice under exclusive markers."""
    pins: list[Pin] = []
    found: re.Match[str] | None = None
    via: set[str] = set()

    def close() -> None:
        if found:
            marker = Marker(found[3].strip()) if found[3] else None
            pins.append(Pin(canonicalize_name(found[1]), found[2], marker, frozenset(via)))

    for line in lock.read_text().splitlines():
        pin = _PIN.match(line)
        if pin:
            close()
            found, via = pin, set()
        elif found and (name := _VIA.match(line)) and line.strip() != "# via":
            via.add(canonicalize_name(name[1]))
    close()
    return pins


def locked(lock: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The lock's pins by name; with `env`, only those whose markers hold there."""
    return {pin.name: pin.version for pin in entries(lock) if pin.holds(env)}


def declared(extra: str | None = None) -> list[Requirement]:
    """pyproject.toml's runtime dependencies, or one extra's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [Requirement(r) for r in names]
