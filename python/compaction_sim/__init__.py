"""compaction-sim from Python: a thin, pure-Python layer around the ``compaction-sim`` binary
installed with this package.

Every function runs the binary and reads what it writes; nothing is computed here, so the
numbers are the command line's, byte for byte. A failure raises :class:`CompactionSimError`
with the exit kind and the tool's one-line message.

>>> import compaction_sim as cs
>>> run = cs.sweep(samples=True, out="reports/first")     # doctest: +SKIP
>>> run.recommendation.line                               # doctest: +SKIP
'compaction=Compaction(after_invocations=2, overlap=0, summarizer=".summarizers.terse")'
>>> run.settings                                          # a polars DataFrame  # doctest: +SKIP

``settings`` and ``runs`` are polars DataFrames, or pandas ones with ``frames="pandas"``;
neither library is a dependency of this package (``pip install polars``, or ``pip install
pandas pyarrow``). See docs/python.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._binary import CompactionSimError, find_binary, run as _run

__all__ = [
    "CompactionSimError",
    "Check",
    "Recommendation",
    "Run",
    "backtest",
    "check",
    "find_binary",
    "inspect",
    "sweep",
    "version",
]

PathLike = Union[str, "os.PathLike[str]"]
Inputs = Union[PathLike, Sequence[PathLike], None]
AxisValue = Union[str, int, float, bool, Sequence[Union[str, int, float]], None]


def version() -> str:
    """The binary's version (``compaction-sim --version`` without the name)."""
    return _run(["--version"]).stdout.strip().split()[-1]


def _input_args(inputs: Inputs) -> List[str]:
    if inputs is None:
        return []
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(i) for i in inputs]


def _flag_args(flags: Mapping[str, AxisValue]) -> List[str]:
    """Keyword arguments as flags: ``after_tokens="40k..120k:20k"`` is ``--after-tokens
    40k..120k:20k``, a list is joined with commas, ``True`` is a bare flag, ``None`` and
    ``False`` leave the flag out."""
    out: List[str] = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


def _frame_library(frames: str) -> Any:
    """The DataFrame module asked for, or an ImportError that says what to install."""
    if frames == "polars":
        try:
            import polars
        except ImportError as e:
            raise ImportError(
                "compaction_sim: Run.settings and Run.runs are polars DataFrames: "
                "`pip install polars` (or `pip install 'compaction-sim[polars]'`), or ask for "
                "pandas with frames=\"pandas\""
            ) from e
        return polars
    if frames == "pandas":
        try:
            import pandas
            import pyarrow  # noqa: F401  (pandas reads runs.parquet through it)
        except ImportError as e:
            raise ImportError(
                "compaction_sim: frames=\"pandas\" needs pandas and pyarrow: "
                "`pip install pandas pyarrow` (or `pip install 'compaction-sim[pandas]'`)"
            ) from e
        return pandas
    raise ValueError(f"frames must be \"polars\" or \"pandas\", not {frames!r}")


@dataclass(frozen=True)
class Recommendation:
    """The setting a sweep recommends, with its figures.

    Attributes:
        line: the line to paste into the agent's manifest
            (``compaction=Compaction(...)``), or the reason nothing is recommended.
        figures: the recommended setting's row of ``settings.json`` (every column of
            docs/columns.md: ``cost_usd_sum`` in USD, ``references_broken_share_mean``, ...);
            empty when nothing is recommended.
        baseline: the no-compaction row of ``settings.json`` (empty when there is none).
        text: the recommendation as the command printed it (the paste line, "with it" and
            "no compaction" lines), when this ``Run`` came from :func:`sweep`.
    """

    line: str
    figures: Dict[str, Any] = field(default_factory=dict)
    baseline: Dict[str, Any] = field(default_factory=dict)
    text: Optional[str] = None

    def __str__(self) -> str:
        return self.text if self.text else self.line


class Run:
    """A run folder written by ``compaction-sim sweep`` (or ``merge``).

    Args:
        folder: the run folder.
        frames: ``"polars"`` (default) or ``"pandas"``: what :attr:`settings` and
            :attr:`runs` return.
        printed: what the sweep printed on stdout, if known (for
            :attr:`Recommendation.text`).
    """

    def __init__(self, folder: PathLike, frames: str = "polars", printed: str = "") -> None:
        #: The run folder, as an absolute path.
        self.folder = Path(os.path.abspath(folder))
        if not (self.folder / "settings.json").is_file():
            raise FileNotFoundError(f"{self.folder}: not a run folder (no settings.json)")
        self.frames = frames
        self._printed = printed

    def __repr__(self) -> str:
        return f"Run({str(self.folder)!r})"

    @property
    def report_html(self) -> Path:
        """The path of the run's ``report.html`` (one self-contained file; open it in a
        browser, or ``IPython.display.HTML(run.report_html.read_text())``)."""
        return self.folder / "report.html"

    @property
    def run_info(self) -> Dict[str, Any]:
        """``run.json``: inputs, grid, prices, every assumption of the run."""
        return json.loads((self.folder / "run.json").read_text(encoding="utf-8"))

    def settings_rows(self) -> List[Dict[str, Any]]:
        """``settings.json``: one dict per setting, no DataFrame library needed."""
        return json.loads((self.folder / "settings.json").read_text(encoding="utf-8"))

    @property
    def recommendation(self) -> Recommendation:
        """The recommended setting: its paste line and figures, beside the baseline."""
        rows = self.settings_rows()
        chosen = next((r for r in rows if r.get("recommended")), None)
        baseline = next((r for r in rows if r.get("trigger_kind") == "none"), {})
        text = _recommendation_text(self._printed)
        if chosen is None:
            first = text.splitlines()[0] if text else "no setting is recommended"
            return Recommendation(line=first, baseline=baseline, text=text or None)
        return Recommendation(
            line=str(chosen["label"]), figures=chosen, baseline=baseline, text=text or None
        )

    @property
    def settings(self) -> Any:
        """One row per setting (``settings.csv``'s columns, docs/columns.md), as a polars
        DataFrame (a pandas one with ``frames="pandas"``)."""
        lib = _frame_library(self.frames)
        return lib.read_csv(self.folder / "settings.csv")

    @property
    def runs(self) -> Any:
        """One row per session and setting (``runs.parquet``), as a polars DataFrame (a
        pandas one with ``frames="pandas"``)."""
        lib = _frame_library(self.frames)
        return lib.read_parquet(self.folder / "runs.parquet")


def _recommendation_text(printed: str) -> str:
    """The lines after ``wrote DIR (...)`` in what sweep printed."""
    lines = printed.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("wrote "):
            return "\n".join(lines[i + 1 :]).strip("\n")
    return ""


def _written_folder(printed: str, cwd: Optional[PathLike]) -> Path:
    """The folder named by sweep's ``wrote DIR (N sessions × M settings)`` line."""
    for line in printed.splitlines():
        if line.startswith("wrote ") and " (" in line:
            folder = Path(line[len("wrote ") :].rsplit(" (", 1)[0])
            return folder if cwd is None else Path(cwd) / folder
    raise CompactionSimError(
        "environment", 0, "compaction-sim sweep did not say which folder it wrote", [], ""
    )


def sweep(
    inputs: Inputs = None,
    out: Optional[PathLike] = None,
    *,
    samples: bool = False,
    frames: str = "polars",
    cwd: Optional[PathLike] = None,
    **axes: AxisValue,
) -> Run:
    """Sweep a grid of compaction settings over transcripts or a session database, as
    ``compaction-sim sweep`` does, and return the run folder.

    Args:
        inputs: transcript files, folders or globs, or an ADK session database URL
            (``"sqlite:///sessions.db"``); one or a list. ``None`` with ``samples=True``
            sweeps the 40 sample sessions.
        out: the run folder (a new path, or an empty folder); default: a new folder under
            ``reports/`` as the command line chooses it.
        samples: sweep the sample sessions (``--samples``), generated into a temporary
            folder.
        frames: ``"polars"`` or ``"pandas"``: what ``Run.settings`` and ``Run.runs`` return.
        cwd: the folder to run in (relative inputs and ``reports/`` are read from it).
        **axes: any ``sweep`` flag, with ``_`` for ``-``: grid axes (``after_tokens="40k,80k"``
            or ``[40000, 80000]``, ``keep_recent_events=10``, ``summarizer=["agent",
            "terse"]``), budgets (``budget_broken_references=0.1``), filters (``app=...``),
            switches (``no_cache=True``, ``force=True``). See ``compaction-sim sweep --help``.

    Returns:
        The :class:`Run`: ``.recommendation``, ``.settings``, ``.runs``, ``.report_html``,
        ``.folder``.

    Raises:
        CompactionSimError: the sweep failed or refused (``.kind``, ``.message``).
    """
    args = ["sweep", *_input_args(inputs)]
    if samples:
        args.append("--samples")
    if out is not None:
        args += ["--out", os.fspath(out)]
    args += _flag_args(axes)
    done = _run(args, cwd=cwd)
    return Run(_written_folder(done.stdout, cwd), frames=frames, printed=done.stdout)


def backtest(paths: Inputs, **flags: AxisValue) -> Dict[str, Any]:
    """Every compaction the transcripts record, beside the ``as recorded`` replay's
    prediction: the JSON of ``compaction-sim backtest PATH... --json`` as dicts
    (``{"compactions": [...], "frameworks": {...}}``, docs/validation.md).

    Raises:
        CompactionSimError: the backtest failed.
    """
    done = _run(["backtest", *_input_args(paths), "--json", *_flag_args(flags)])
    return json.loads(done.stdout)


def inspect(paths: Inputs = None, *, samples: bool = False, **flags: AxisValue) -> Dict[str, Any]:
    """One entry per session (sizes, usage, critical events) and the totals: the JSON of
    ``compaction-sim inspect PATH... --json`` as dicts.

    Raises:
        CompactionSimError: nothing could be read.
    """
    args = ["inspect", *_input_args(paths), "--json"]
    if samples:
        args.append("--samples")
    done = _run(args + _flag_args(flags))
    return json.loads(done.stdout)


@dataclass(frozen=True)
class Check:
    """An accepted setting.

    Attributes:
        setting: the setting as the manifest normalises it (``Compaction(...)``).
        adk: the ADK config it becomes (``EventsCompactionConfig(...)``).
        notes: anything else the check said (the summarizer path imported, or why it was
            not checked).
    """

    setting: str
    adk: str
    notes: List[str] = field(default_factory=list)


def check(line: str, **flags: AxisValue) -> Check:
    """Validate a ``Compaction(...)`` setting the way the platform manifest does
    (``compaction-sim check``).

    Args:
        line: ``'Compaction(after_tokens=80_000, keep_recent_events=20)'`` (a
            ``compaction=`` prefix is accepted).
        **flags: ``package=`` (the folder a leading-dot summarizer path is relative to),
            ``python=``.

    Raises:
        CompactionSimError: the setting is refused (``kind == "refused"``, ``message`` the
            tool's ``refused: FIELD: why`` line) or is not a setting (``"bad input"``).
    """
    spec = line.strip()
    if spec.startswith("compaction="):
        spec = spec[len("compaction=") :]
    done = _run(["check", spec, *_flag_args(flags)])
    setting, adk, notes = "", "", []
    for text in done.stdout.splitlines():
        body = text.strip()
        if body.startswith("ok: "):
            setting = body[len("ok: ") :]
        elif body.startswith("ADK: "):
            adk = body[len("ADK: ") :]
        elif body:
            notes.append(body)
    return Check(setting=setting, adk=adk, notes=notes)
