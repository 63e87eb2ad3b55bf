"""The verifier's image as its Dockerfile describes it, run without a container engine: the same
entrypoint and command, the same environment, started as the same user, with the users it
creates created here (same names and uids). Nothing builds the image in the suite (no engine
here); a real build and run is a separate step (docs/deploy.md)."""

from __future__ import annotations

import json
import pwd
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.users import check_python, ensure_user, taskgate_command

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "verifier_container" / "Dockerfile"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) per logical line: continuations joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        name, _, rest = full.partition(" ")
        out.append((name.upper(), rest.strip()))
    return out


@dataclass(frozen=True)
class Image:
    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]
    user: str | None  # the last USER, if any: who the container starts as
    users: list[tuple[str, int]]  # created by useradd: (name, uid)

    @classmethod
    def read(cls, path: Path = DOCKERFILE) -> Image:
        entry: list[str] = []
        cmd: list[str] = []
        env: dict[str, str] = {}
        user: str | None = None
        users: list[tuple[str, int]] = []
        for name, rest in _instructions(path.read_text()):
            if name == "ENTRYPOINT":
                entry = json.loads(rest)
            elif name == "CMD":
                cmd = json.loads(rest)
            elif name == "ENV":
                env |= dict(item.split("=", 1) for item in shlex.split(rest))
            elif name == "USER":
                user = rest
            elif name == "RUN":
                for part in rest.split("&&"):
                    words = shlex.split(part)
                    if words and words[0] == "useradd":
                        users.append((words[-1], int(words[words.index("--uid") + 1])))
        return cls(entry, cmd, env, user, users)

    def create_users(self) -> None:
        for name, uid in self.users:
            ensure_user(name, uid)

    def start_uid(self) -> tuple[int, int]:
        if self.user is None:
            return 0, 0
        pw = pwd.getpwuid(int(self.user)) if self.user.isdigit() else pwd.getpwnam(self.user)
        return pw.pw_uid, pw.pw_gid

    def popen(self, env: dict[str, str], args: list[str] | None = None) -> subprocess.Popen[str]:
        """The container's process: entrypoint + (args or CMD), the image's environment plus
        `env` (what ECS injects), as the image's user; `taskgate` is one every user can run, as
        it is in the image."""
        self.create_users()
        uid, gid = self.start_uid()
        bin_dir = str(Path(taskgate_command(check_python())).parent)
        full = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": "/root" if uid == 0 else "/"}
        full |= self.env | env
        return subprocess.Popen(
            [*self.entrypoint, *(self.cmd if args is None else args)],
            env=full,
            cwd="/",
            user=uid if uid else None,
            group=gid if uid else None,
            extra_groups=[] if uid else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
