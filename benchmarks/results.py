"""Run the benchmarks behind docs/results.md, one after the other; with --write-docs each rewrites its sections.

    python benchmarks/results.py --write-docs --keep /tmp/results-keep      # every section (hours)
    python benchmarks/results.py --write-docs --only speed,raw-text --keep /tmp/results-keep
    python benchmarks/results.py --list                                    # the commands, nothing run
    python benchmarks/results.py --readme                # README's tables from docs/results.md, nothing run

Each section of ``docs/results.md`` is written by one script (``report.py``
keeps the rest of the file as it is); ``--only`` takes section names or the
groups below (``tagging`` runs both tagging scripts). ``--keep DIR`` is passed
to the scripts that train UDPipe 1 models, which keep them there for later
runs (a folder outside the repository: models are not committed). A script
that fails is reported and the others still run; the exit status is then 1.
Needs ``NLTK_DATA`` and ``EGNLP_UD_DIR``, and UDPipe 1 (``pip install
ufal.udpipe``) for the parsing, raw-text and speed sections.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# group -> (sections it writes, script, arguments, whether it takes --keep), in the order of docs/results.md
PLAN: dict[str, list[tuple[tuple[str, ...], str, list[str], bool]]] = {
    "parsing": [(("parsing",), "parser_accuracy.py",
                 ["--runs", "es:default,es:projective:grandparents:cascade,wsj:default,"
                            "wsj:projective:grandparents:cascade,eu:default,eu:non-projective:grandparents:cascade,"
                            "pt-bosque:default,pt-bosque:projective:grandparents:cascade,nl-alpino:default,"
                            "nl-alpino:projective:grandparents:cascade", "--udpipe"],
                 True)],
    "labels": [(("labels",), "label_context.py", [], True)],
    "tagging": [(("tagging",), "tagger_accuracy.py",
                 ["--runs", "conll2000-pos:crf:eg-ll,conll2000-pos:maxent:cd,ptb-pos:crf:eg-ll,ptb-pos:maxent:cd,"
                            "brown:crf:eg-ll,brown:maxent:cd"], False),
                (("tagging-ud",), "ud_taggers.py", [], False)],
    "raw-text": [(("raw-text",), "raw_text.py", [], True)],
    "speed": [(("speed",), "udpipe_compare.py", ["--runs", "5"], True)],
    "trainers": [(("trainers",), "trainers.py", [], False)],
    "first-run": [(("first-run",), "first_run.py", ["--runs", "3"], True)],
}


def selected(only: str) -> list[tuple[tuple[str, ...], str, list[str], bool]]:
    """The steps of the groups or sections named in ``only`` (all when empty), in the plan's order."""
    names = {n.strip() for n in only.split(",") if n.strip()}
    known = set(PLAN) | {s for steps in PLAN.values() for sections, *_ in steps for s in sections}
    unknown = names - known
    if unknown:
        sys.exit(f"--only: unknown section {', '.join(sorted(unknown))} (choose from {', '.join(sorted(known))})")
    return [step for group, steps in PLAN.items() for step in steps
            if not names or group in names or names & set(step[0])]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="sections or groups to run, comma-separated (default: all: "
                                               f"{', '.join(PLAN)})")
    ap.add_argument("--keep", type=Path, help="folder that keeps trained UDPipe 1 models across runs, passed on")
    ap.add_argument("--write-docs", action="store_true", help="each script writes its section(s) of docs/results.md")
    ap.add_argument("--list", action="store_true", help="print the commands and run nothing")
    ap.add_argument("--readme", action="store_true", help="rewrite README.md's results sections from "
                                                          "docs/results.md (their headline tables) and run nothing")
    args = ap.parse_args(argv)
    if args.readme:
        import report

        print(f"README.md: sections {', '.join(report.refresh_readme())} rewritten", file=sys.stderr)
        return
    steps = selected(args.only)
    failed, total_cpu, start = [], 0.0, time.perf_counter()
    for sections, script, options, takes_keep in steps:
        command = [sys.executable, str(HERE / script), *options]
        if takes_keep and args.keep:
            command += ["--keep", str(args.keep.resolve())]
        if args.write_docs:
            command.append("--write-docs")
        shown = " ".join(["python", f"benchmarks/{script}", *command[2:]])
        if args.list:
            print(shown)
            continue
        print(f"[{time.strftime('%H:%M:%S')}] {', '.join(sections)}: {shown}", file=sys.stderr, flush=True)
        began = time.perf_counter()
        child = subprocess.Popen(command, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        cpu = usage.ru_utime + usage.ru_stime
        total_cpu += cpu
        code = os.waitstatus_to_exitcode(status)
        print(f"[{time.strftime('%H:%M:%S')}] {script}: exit {code}, {cpu:,.0f} CPU s, "
              f"{time.perf_counter() - began:,.0f} s wall", file=sys.stderr, flush=True)
        if code != 0:
            failed.append(script)
    if not args.list:
        print(f"[{time.strftime('%H:%M:%S')}] done: {total_cpu:,.0f} CPU s, {time.perf_counter() - start:,.0f} s wall"
              + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
