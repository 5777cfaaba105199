"""docs/results.md and its writer: sections replaced alone, bad markers refused, every section's command runnable.

No benchmark runs here: the writer is tested on small files in a temporary folder, and each script a section of
docs/results.md names is only asked for its ``--help``.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _load_report():
    spec = importlib.util.spec_from_file_location("benchmarks_report", BENCHMARKS / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


report = _load_report()
RUN = report.Provenance(machine="Test CPU, 2 cores", date="2000-01-01", version="0.0", commit="abc1234")
OTHER = """# Title

Text before, with trailing spaces   
and a tab\tand unicode: ação.

<!-- results:first -->
old first
<!-- /results:first -->

Between the sections.

<!-- results:second -->
old second
<!-- /results:second -->
Text after, no newline at the end"""


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_the_writer_replaces_only_its_section_and_keeps_the_rest_byte_for_byte(tmp_path: Path) -> None:
    results = write(tmp_path / "results.md", OTHER)
    report.write_section("first", "python benchmarks/x.py --write-docs", "| a |\n|---|\n| 1 |", files=[],
                         run=RUN, results=results)
    text = results.read_text(encoding="utf-8")
    start = text.index("<!-- results:first -->") + len("<!-- results:first -->")
    end = text.index("<!-- /results:first -->")
    assert text[:start] + text[end:] == OTHER.replace("\nold first\n", "")
    inner = text[start:end]
    assert "old first" not in inner and "| 1 |" in inner and "Test CPU, 2 cores" in inner and "abc1234" in inner
    assert report.section_command(inner) == "python benchmarks/x.py --write-docs"
    # writing it again with the same content changes nothing
    before = results.read_bytes()
    report.write_section("first", "python benchmarks/x.py --write-docs", "| a |\n|---|\n| 1 |", files=[],
                         run=RUN, results=results)
    assert results.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name != "results.md"]  # no temporary file left behind


def test_a_missing_section_is_added_at_the_end_and_a_readme_gets_only_the_headline(tmp_path: Path) -> None:
    results = write(tmp_path / "results.md", OTHER)
    readme = write(tmp_path / "README.md", "# R\n\n<!-- results:third -->\n<!-- /results:third -->\n\nEnd.\n")
    unrelated = write(tmp_path / "other.md", "no markers here\n")
    written = report.write_section("third", "python benchmarks/x.py", "HEADLINE", details="DETAILS",
                                   files=[readme, unrelated], run=RUN, results=results)
    assert written == [results, readme]
    text = results.read_text(encoding="utf-8")
    assert text.startswith(OTHER.rstrip("\n"))
    assert text.rstrip("\n").endswith("<!-- /results:third -->")
    assert "HEADLINE" in text and "DETAILS" in text
    readme_text = readme.read_text(encoding="utf-8")
    assert "HEADLINE" in readme_text and "DETAILS" not in readme_text and readme_text.endswith("\n\nEnd.\n")
    assert unrelated.read_text(encoding="utf-8") == "no markers here\n"


def test_a_readme_gets_the_first_table_and_the_command(tmp_path: Path) -> None:
    results = write(tmp_path / "results.md", OTHER)
    readme = write(tmp_path / "README.md", "# R\n\n<!-- results:first -->\n<!-- /results:first -->\n")
    body = "How it was made.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nMore prose.\n\n| c |\n|---|\n| 3 |"
    report.write_section("first", "python benchmarks/x.py --write-docs", body, files=[readme], run=RUN,
                         results=results)
    inner = readme.read_text(encoding="utf-8").split("<!-- results:first -->")[1].split("<!-- /results:first")[0]
    assert inner.startswith("\n| a | b |\n|---|---|\n| 1 | 2 |\n\n") and "How it was made" not in inner
    assert "| c |" not in inner and "More prose" not in inner
    assert "`python benchmarks/x.py --write-docs` (Run on 2000-01-01; Test CPU, 2 cores" in inner
    assert "[results.md](results.md)." in inner
    assert "How it was made" in results.read_text(encoding="utf-8")


@pytest.mark.parametrize("bad", [
    "<!-- results:first -->\nnever closed\n",
    "<!-- /results:first -->\nend without start\n",
    "<!-- results:first -->\n<!-- results:second -->\n<!-- /results:second -->\n<!-- /results:first -->\n",
    "<!-- results:first -->\n<!-- /results:second -->\n",
    "<!-- results:first -->\n<!-- /results:first -->\n<!-- results:first -->\n<!-- /results:first -->\n",
])
def test_a_file_with_unbalanced_markers_is_refused_and_nothing_is_written(tmp_path: Path, bad: str) -> None:
    results = write(tmp_path / "results.md", OTHER)
    readme = write(tmp_path / "README.md", bad)
    with pytest.raises(ValueError, match="README.md"):
        report.write_section("first", "python benchmarks/x.py", "new", files=[readme], run=RUN, results=results)
    assert results.read_bytes() == OTHER.encode("utf-8")
    assert readme.read_bytes() == bad.encode("utf-8")


def test_commands_show_no_absolute_path_of_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EGNLP_UD_DIR", str(tmp_path))
    shown = report.command_line("/anywhere/benchmarks/raw_text.py",
                                ["--keep", "/somewhere/keep", f"--out={ROOT / 'runs' / 'x'}",
                                 "--ud-dir", str(tmp_path), str(tmp_path / "a.conllu"), "/elsewhere/file"])
    assert shown == ("python benchmarks/raw_text.py --keep KEEP --out=runs/x --ud-dir $EGNLP_UD_DIR "
                     "$EGNLP_UD_DIR/a.conllu PATH")


def sections(text: str) -> dict[str, str]:
    return {name: text[start:end] for name, (start, end) in report.marker_spans(text).items()}


def test_every_section_of_results_md_names_a_benchmark_command_that_writes_docs() -> None:
    path = ROOT / "docs" / "results.md"
    found = sections(path.read_text(encoding="utf-8"))
    assert found, "docs/results.md has no sections"
    helps: dict[Path, str] = {}
    for name, inner in found.items():
        command = report.section_command(inner)
        assert command is not None, f"section {name}: no command"
        assert command.startswith("python benchmarks/"), f"section {name}: {command}"
        script = ROOT / shlex.split(command)[1]
        assert script.is_file(), f"section {name}: {script} does not exist"
        assert "--write-docs" in shlex.split(command), f"section {name}: the command does not write the docs"
        if script not in helps:
            done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                                  cwd=ROOT, timeout=120)
            assert done.returncode == 0, f"{script.name} --help failed: {done.stderr[-500:]}"
            helps[script] = done.stdout
        # argparse's help: "--name" for a flag, "--name METAVAR" for an option that takes a value
        options: dict[str, str] = {}
        for option, metavar in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)( [A-Z][A-Z0-9_]*)?", helps[script]):
            options[option] = options.get(option) or metavar
        assert "--write-docs" in options, f"{script.name} does not accept --write-docs"
        words = shlex.split(command)[2:]
        while words:
            word = words.pop(0)
            option = word.split("=")[0]
            assert option in options, f"section {name}: {script.name} has no option {word}"
            if options[option] and "=" not in word:
                assert words, f"section {name}: {option} without its value"
                words.pop(0)


def test_results_md_has_no_absolute_paths_and_short_prose_lines() -> None:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    fenced = False  # a command's word (a long --runs list) cannot be broken: code lines may be longer
    for number, line in enumerate(text.splitlines(), 1):
        assert not re.search(r"(^|[\s`(])/(home|work|tmp|Users|root|mnt|var)/", line), f"results.md:{number}"
        fenced ^= line.startswith("```")
        if not line.startswith("|") and not fenced:
            assert len(line) <= 120, f"results.md:{number}: {len(line)} characters"
