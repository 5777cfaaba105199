"""Where a benchmark's tables go: the sections of ``docs/results.md``, and what they say about their run.

A section of a Markdown file is the text between ``<!-- results:NAME -->`` and
``<!-- /results:NAME -->``. :func:`write_section` replaces it in
``docs/results.md`` (adding the section at the end when the file lacks it)
and in every other file given that holds the same markers (``README.md``
may), leaving the rest of each file byte for byte; a file whose markers do
not pair up is refused before anything is written. A section starts with
the command that made it and the run's provenance (:func:`provenance`:
the machine, the date, the egnlp version and git commit), then the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results.md"
README = ROOT / "README.md"
# The files a section goes to by default: docs/results.md always, README.md where it holds the section's markers.
DEFAULT_FILES = (RESULTS, README)
# Headings of the sections created at the end of docs/results.md (a name not here gets a heading made of it).
TITLES = {
    "parsing": "Parsing accuracy",
    "labels": "Arc labels: the tree around the arc",
    "tagging": "Tagging accuracy",
    "tagging-ud": "UPOS tagging on UD treebanks",
    "raw-text": "Raw text to trees (CoNLL 2018 metrics)",
    "speed": "Parsing speed",
    "first-run": "The first parse after an install",
    "trainers": "Trainers",
}
HEADER = """# Results

Every table below is written by a benchmark script from its own run: above
each one, the command that made it, the machine, the date, the egnlp
version and commit. `python benchmarks/results.py --write-docs` runs them
all and rewrites this file (`--only NAME` for some sections); each script
also takes `--write-docs` to rewrite its own sections. See
`benchmarks/README.md`.
"""
MARKER = re.compile(r"<!-- (/?)results:([A-Za-z0-9_-]+) -->")
SECTION_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Provenance:
    """What a table says about the run that made it."""

    machine: str
    date: str
    version: str
    commit: str

    def line(self) -> str:
        return f"Run on {self.date}; {self.machine}; egnlp {self.version}, commit {self.commit}."


def machine() -> str:
    """The CPU model, its core count and the memory of this machine, as the system reports them."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if not model:
        try:
            model = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                   check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            model = platform.processor() or platform.machine()
    cores = os.cpu_count() or 1
    text = f"{model}, {cores} core{'s' if cores != 1 else ''}"
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        text += f", {pages * size / 2 ** 30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    return f"{text}, {platform.system()}"


def version() -> str:
    """egnlp's version, read from ``egnlp/__init__.py`` (no import: the benchmark may run another interpreter)."""
    found = re.search(r'^__version__ = "([^"]+)"', (ROOT / "egnlp" / "__init__.py").read_text(encoding="utf-8"),
                      re.MULTILINE)
    return found.group(1) if found else "unknown"


def commit(outputs: tuple[Path, ...] = DEFAULT_FILES) -> str:
    """The checkout's short commit hash, marked when tracked files other than ``outputs`` have changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        excluded = [f":(exclude){p.relative_to(ROOT).as_posix()}" for p in outputs if p.is_relative_to(ROOT)]
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head} with uncommitted changes" if changed else head


def provenance() -> Provenance:
    """The machine, today's date (UTC), egnlp's version and the commit: take it when the run starts."""
    return Provenance(machine(), datetime.datetime.now(datetime.timezone.utc).date().isoformat(), version(),
                      commit())


def shown_argument(arg: str, previous: str) -> str:
    """One command-line argument as a section shows it: no absolute path of this machine.

    A path inside the checkout becomes relative to it, one in ``$EGNLP_UD_DIR`` or ``$NLTK_DATA`` names the
    variable, and any other absolute path becomes the upper-case name of its option (``--keep /x`` ->
    ``--keep KEEP``) or ``PATH``.
    """
    if arg.startswith("--") and "=" in arg:
        option, value = arg.split("=", 1)
        return f"{option}={shown_argument(value, option)}"
    if not os.path.isabs(arg):
        return arg
    path = Path(arg).resolve()
    if path.is_relative_to(ROOT):
        return path.relative_to(ROOT).as_posix() or "."
    for var in ("EGNLP_UD_DIR", "NLTK_DATA"):
        folder = os.environ.get(var)
        if folder and path.is_relative_to(Path(folder).resolve()):
            rest = path.relative_to(Path(folder).resolve()).as_posix()
            return f"${var}" + ("" if rest == "." else f"/{rest}")
    if previous.startswith("--") and len(previous) > 2:
        return previous[2:].upper().replace("-", "_")
    return "PATH"


def command_line(script: str | Path, argv: list[str]) -> str:
    """``python benchmarks/SCRIPT ARGS`` as run, shown without absolute paths (:func:`shown_argument`)."""
    shown = [shown_argument(arg, argv[i - 1] if i else "") for i, arg in enumerate(argv)]
    return " ".join(_quote(w) for w in ["python", f"benchmarks/{Path(script).name}", *shown])


def _quote(word: str) -> str:
    """A shell word: quoted where needed, but ``$VAR/...`` left for the shell to expand."""
    return word if re.fullmatch(r"\$[A-Z_]+[\w/.-]*", word) else shlex.quote(word)


def add_options(ap: argparse.ArgumentParser) -> None:
    """The ``--write-docs`` option every benchmark script takes."""
    ap.add_argument("--write-docs", action="store_true",
                    help="also write the tables into their section(s) of docs/results.md (and of README.md where "
                         "it has the section's markers)")


def wrap_prose(text: str, width: int = 100) -> str:
    """``text`` with its prose paragraphs wrapped at ``width``; tables, lists, headings and code kept as they are."""
    out, fenced = [], False
    for block in text.strip().split("\n\n"):
        if block.startswith("```") or fenced:
            fenced = (block.count("```") % 2 == 1) != fenced
            out.append(block)
        elif block.lstrip().startswith(("|", "#", "- ", "* ", "<", "    ")):
            out.append(block)
        else:
            out.append(textwrap.fill(" ".join(block.split()), width, break_long_words=False,
                                     break_on_hyphens=False))
    return "\n\n".join(out)


def command_block(command: str, width: int = 100) -> str:
    """The command as a shell block, broken between its words with backslashes to stay within ``width``."""
    lines, line, words = [], "", []
    for word in shlex.split(command):  # an option and its value stay on one line
        shown = _quote(word)
        if words and words[-1].startswith("-") and " " not in words[-1] and not word.startswith("-"):
            words[-1] += " " + shown
        else:
            words.append(shown)
    for word in words:
        if line and len(line) + 1 + len(word) > width - 2:
            lines.append(line + " \\")
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "```sh\n" + "\n".join(lines) + "\n```"


def section_command(inner: str) -> str | None:
    """The command a section's text names (the first ``sh`` block after "Command:"), on one line; None if none."""
    found = re.search(r"Command:\s*```sh\n(.*?)\n```", inner, re.DOTALL)
    return None if found is None else " ".join(re.sub(r"\s*\\\n\s*", " ", found.group(1)).split())


def section_text(command: str, body: str, run: Provenance) -> str:
    """What goes between a section's markers: the command, the provenance, then ``body`` (prose wrapped)."""
    return f"\nCommand:\n\n{command_block(command)}\n\n{wrap_prose(run.line())}\n\n{wrap_prose(body)}\n\n"


def headline_text(command: str, body: str, run: Provenance, results: Path) -> str:
    """What a README gets between a section's markers: the body's first table (the headline) and one line
    naming the command and the run, with a link to the results file (the whole body when it holds no
    table)."""
    lines = body.strip("\n").splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return section_text(command, body, run)
    end = start
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    where = results.relative_to(ROOT) if results.is_relative_to(ROOT) else results.name
    note = f"`{command}` ({run.line().rstrip('.')}); how each figure was made: [{where}]({where})."
    return "\n" + "\n".join(lines[start:end + 1]) + f"\n\n{wrap_prose(note)}\n\n"


def refresh_readme(readme: Path = README, results: Path = RESULTS) -> list[str]:
    """Rewrite every results section of ``readme`` from the same section of ``results`` (its command, its
    run line and its first table: :func:`headline_text`), atomically; the names of the sections written."""
    text, source = readme.read_text(encoding="utf-8"), results.read_text(encoding="utf-8")
    spans, found = marker_spans(text, str(readme)), marker_spans(source, str(results))
    written = []
    for name, (start, end) in sorted(spans.items(), key=lambda item: -item[1][0]):
        if name not in found:
            continue
        inner = source[found[name][0]:found[name][1]]
        command = section_command(inner)
        run_line = re.search(r"^Run on (.*?); (.*); egnlp (\S+), commit (\S+?)\.$", inner, re.MULTILINE)
        if command is None or run_line is None:
            continue
        run = Provenance(machine=run_line.group(2), date=run_line.group(1), version=run_line.group(3),
                         commit=run_line.group(4))
        body = inner[inner.index(run_line.group(0)) + len(run_line.group(0)):]
        text = text[:start] + headline_text(command, body, run, results) + text[end:]
        written.insert(0, name)
    _replace_atomically(readme, text)
    return written


def marker_spans(text: str, where: str = "text") -> dict[str, tuple[int, int]]:
    """Each section's (start, end) of the text between its markers, checked.

    Raises:
        ValueError: naming ``where`` and the line, when the markers do not pair up: an end marker without its
            start, a start marker inside another section or never closed, or a section named twice.
    """
    spans: dict[str, tuple[int, int]] = {}
    open_name, open_end = None, 0
    for match in MARKER.finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if not closing:
            if open_name is not None:
                raise ValueError(f"{where}:{line}: section {name!r} starts inside section {open_name!r}")
            if name in spans:
                raise ValueError(f"{where}:{line}: section {name!r} appears twice")
            open_name, open_end = name, match.end()
        elif open_name != name:
            raise ValueError(f"{where}:{line}: end of section {name!r} without its start")
        else:
            spans[name] = (open_end, match.start())
            open_name = None
    if open_name is not None:
        raise ValueError(f"{where}: section {open_name!r} is never closed (no <!-- /results:{open_name} -->)")
    return spans


def _replace_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        else:
            os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_section(name: str, command: str, body: str, files: tuple[Path, ...] | list[Path] | None = None, *,
                  details: str = "", run: Provenance | None = None, results: Path | None = None) -> list[Path]:
    """Replace section ``name`` in ``docs/results.md`` and in each of ``files`` that holds its markers.

    The section gets the command, the provenance (``run``, by default taken now) and ``body``; in the
    results file ``details`` follows the body (a README gets the headline alone). The results file (``results``,
    by default ``docs/results.md``) always gets the section, at its end when it has none (and the file is made
    when missing); another file without the section's markers is left alone. Every file is read and checked
    first, and nothing is written when one has markers that do not pair up. Each file is replaced atomically.

    Returns:
        The files written.

    Raises:
        ValueError: a bad section name, or a file with unbalanced markers (nothing written then).
    """
    if not SECTION_NAME.fullmatch(name):
        raise ValueError(f"section name {name!r}: use letters, digits, '-' and '_'")
    results = RESULTS if results is None else Path(results)
    run = provenance() if run is None else run
    with _locked(results):  # two benchmarks writing at once each keep the other's section
        return _write_section(name, command, body, files, details, run, results)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock for rewriting ``path``, on a file in the temporary folder (none where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    key = hashlib.sha1(str(path.resolve()).encode("utf-8")).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"egnlp-results-{key}.lock", "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_section(name: str, command: str, body: str, files, details: str, run: Provenance,
                   results: Path) -> list[Path]:
    targets = [results] + [Path(f) for f in (DEFAULT_FILES[1:] if files is None else files)
                           if Path(f).resolve() != results.resolve()]
    planned: list[tuple[Path, str]] = []
    for path in targets:
        is_results = path == results
        if not path.exists():
            if is_results:
                planned.append((path, HEADER))
            continue
        text = path.read_text(encoding="utf-8")
        spans = marker_spans(text, str(path))
        if name in spans or is_results:
            planned.append((path, text))
    written = []
    for path, text in planned:
        is_results = path == results
        if is_results:
            inner = section_text(command, body + (f"\n\n{details.strip()}" if details.strip() else ""), run)
        else:
            inner = headline_text(command, body, run, results)
        spans = marker_spans(text, str(path))
        if name in spans:
            start, end = spans[name]
            new = text[:start] + inner + text[end:]
        else:
            title = TITLES.get(name, name.replace("-", " ").capitalize())
            new = text.rstrip("\n") + f"\n\n## {title}\n\n<!-- results:{name} -->{inner}<!-- /results:{name} -->\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace_atomically(path, new)
        written.append(path)
    return written


def markdown_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A Markdown table; ``align`` has one letter a column, ``l`` or ``r`` (default: the first left, others right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def chosen_treebanks(only: str, known: Iterable[str], ud_dir: str | None) -> list[str]:
    """The treebanks of ``--only`` (all ``known`` ones when empty); exits with a message for an unknown
    name or no UD folder (``--ud-dir`` / ``$EGNLP_UD_DIR``)."""
    known = list(known)
    if not ud_dir:
        sys.exit("give --ud-dir or set EGNLP_UD_DIR")
    names = [n for n in (only.split(",") if only else known) if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"--only: unknown treebank {', '.join(unknown)} (choose from {', '.join(known)})")
    return names
