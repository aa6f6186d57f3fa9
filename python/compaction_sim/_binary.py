"""Find the ``compaction-sim`` binary this package was installed with, and run it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, List, Optional, Sequence

BINARY = "compaction-sim" + (".exe" if sys.platform == "win32" else "")

#: Exit codes of the binary (docs/cli.md "Exit codes") and what each means.
EXIT_KINDS: Dict[int, str] = {
    1: "refused",
    2: "bad input",
    3: "environment",
    130: "interrupted",
}


class CompactionSimError(RuntimeError):
    """The binary ended with a non-zero exit code.

    Attributes:
        kind: what kind of failure the exit code says: ``"refused"`` (exit 1: a setting
            refused, a disagreement, an estimate awaiting ``--yes``), ``"bad input"`` (exit
            2: bad input or usage), ``"environment"`` (exit 3: an I/O or environment
            failure), ``"interrupted"`` (130), else ``"exit N"``.
        exit_code: the binary's exit code.
        message: the tool's one-line message (its ``error: ...`` or ``refused: ...`` line).
        command: the command line that was run.
        stderr: everything the binary wrote to stderr.
    """

    def __init__(
        self, kind: str, exit_code: int, message: str, command: Sequence[str], stderr: str
    ) -> None:
        super().__init__(f"{message} (compaction-sim exit {exit_code}: {kind})")
        self.kind = kind
        self.exit_code = exit_code
        self.message = message
        self.command = list(command)
        self.stderr = stderr


def _candidates() -> List[Path]:
    """Where an install puts the binary: the scripts folder of this interpreter's
    environment (a venv, the system, ``uvx``), the user scheme's (``pip install --user``),
    and a ``bin`` folder beside a ``pip install --target`` folder."""
    out = [Path(sysconfig.get_path("scripts"))]
    user_scheme = {
        "nt": "nt_user",
        "posix": "posix_user",
    }.get(os.name)
    if sys.platform == "darwin" and sys._framework:  # type: ignore[attr-defined]
        user_scheme = "osx_framework_user"
    if user_scheme and user_scheme in sysconfig.get_scheme_names():
        out.append(Path(sysconfig.get_path("scripts", scheme=user_scheme)))
    # `pip install --target T` puts the package in T/compaction_sim and the binary in T/bin.
    out.append(Path(__file__).resolve().parent.parent / "bin")
    return out


def find_binary() -> str:
    """The path of the ``compaction-sim`` binary: ``$COMPACTION_SIM_BINARY`` when set (a
    build of your own), else the one installed with this package, else one on ``PATH``.

    Raises:
        FileNotFoundError: no binary is found; the message lists where it was looked for.
    """
    env = os.environ.get("COMPACTION_SIM_BINARY")
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError(f"COMPACTION_SIM_BINARY={env} is not an executable file")
        return env
    tried = []
    for folder in _candidates():
        path = folder / BINARY
        tried.append(str(path))
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    on_path = shutil.which(BINARY)
    if on_path:
        return on_path
    raise FileNotFoundError(
        "the compaction-sim binary was not found (looked in "
        + ", ".join(tried)
        + " and on PATH): reinstall the wheel (`pip install compaction-sim`) or set "
        "COMPACTION_SIM_BINARY to a binary you built"
    )


def _message(stdout: str, stderr: str, code: int) -> str:
    """The tool's one-line message: its last ``error:`` line on stderr, else its
    ``refused:`` line (stdout for ``check``, stderr for ``replay``), else the last
    non-empty line it wrote."""
    err_lines = [line for line in stderr.splitlines() if line.strip()]
    out_lines = [line for line in stdout.splitlines() if line.strip()]
    for prefix in ("error: ", "refused: "):
        for line in reversed(err_lines + out_lines):
            if line.startswith(prefix):
                return line
    rest = err_lines or out_lines
    return rest[-1] if rest else f"compaction-sim ended with exit code {code}"


def run(
    args: Sequence[str], *, cwd: Optional[os.PathLike] = None, ok: Sequence[int] = (0,)
) -> "subprocess.CompletedProcess[str]":
    """Run the binary with ``args``, capturing its output as text.

    Raises:
        CompactionSimError: it ended with a code not in ``ok``.
    """
    command = [find_binary(), *[str(a) for a in args]]
    done = subprocess.run(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    if done.returncode not in ok:
        code = done.returncode
        kind = EXIT_KINDS.get(code, f"exit {code}")
        raise CompactionSimError(
            kind, code, _message(done.stdout, done.stderr, code), command, done.stderr
        )
    return done
