"""``python -m compaction_sim ARGS...`` runs the binary installed with this package, as the
``compaction-sim`` command would."""

from __future__ import annotations

import os
import subprocess
import sys

from ._binary import find_binary


def main() -> int:
    """Run the binary with this process's arguments; returns its exit code."""
    binary = find_binary()
    if sys.platform == "win32":
        return subprocess.run([binary, *sys.argv[1:]]).returncode
    os.execv(binary, [binary, *sys.argv[1:]])
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
