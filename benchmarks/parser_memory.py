"""Peak memory of parser training against the number of training sentences, printed as a Markdown table.

Run from the project root (NLTK_DATA must point at the corpora)::

    python benchmarks/parser_memory.py                          # wsj train x1, x2, x4; one pass of the default trainer each
    python benchmarks/parser_memory.py --replicas 1,2,4,8 --passes 2
    python benchmarks/parser_memory.py --named es --passes 60   # also `parser train --data es` as it is

The training split of ``--data`` is written once as a CoNLL file (the corpora
API's writer), and the file's text is repeated k times for each replica count
k, so that the features, the alphabet and the sentence lengths stay those of
one copy and only the number of sentences grows.  Each count is trained by
its own ``egnlp parser train --train FILE --out MODEL --passes P`` process
(default settings otherwise), one after the other, and its peak resident set
size is the operating system's account of the finished child
(``os.wait4``, ``ru_maxrss``).  The table gives, per count, the sentences,
arc parts (the (n+1)^2 cells of every sentence), peak RSS and seconds; below
it, the least-squares line through the peaks: the growth in MB per 1,000
training sentences and its value at 0 sentences (what does not grow with the
data: the interpreter, the kernels, the alphabet).  ``--named NAME`` adds one
run of ``egnlp parser train --data NAME`` with the same ``--passes`` (0: the
default pass limit), e.g. the peak of ``es`` with everything at its default.

The peak of one pass is the peak of training: every per-part array (the
trainer's theta and marginals, the problem's gold and loss) is allocated
before the first pass, and the features are computed one sentence at a time.
Memory figures do not depend on the machine's load; the seconds do.  The
children import ``egnlp`` as this interpreter finds it from a temporary
folder (``PYTHONPATH`` applies), so another checkout can be measured the same
way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys; from egnlp.cli import main; sys.argv[0] = 'egnlp'; main()"


def run(args: list[str], folder: Path) -> tuple[float, float, int]:
    """Run ``egnlp ARGS`` in a child process started in ``folder``: its peak RSS in MB, wall seconds and
    exit status."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CLI, *args], cwd=folder, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    error = child.stderr.read().decode(errors="replace").strip()
    child.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"egnlp {' '.join(args)} failed ({code}): {error[-500:]}", file=sys.stderr)
    return usage.ru_maxrss / 1024.0, seconds, code  # ru_maxrss is in KiB on Linux


def slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a x + b through the points: (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return a, my - a * mx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="wsj", help="data set whose training split is repeated (default wsj)")
    ap.add_argument("--replicas", default="1,2,4", help="comma-separated repeat counts (default 1,2,4)")
    ap.add_argument("--passes", type=int, default=1, help="passes of each run (the default trainer) (0: the default limit)")
    ap.add_argument("--named", help="also train on this named data set (its train and dev splits)")
    ap.add_argument("--keep", help="folder for the CoNLL files and models (default: a temporary one)")
    opts = ap.parse_args()
    counts = [int(c) for c in opts.replicas.split(",")]
    if len(counts) < 2 or min(counts) < 1:
        ap.error("--replicas needs at least two counts >= 1")

    from egnlp.corpora import load_dataset, write_conll

    sentences = load_dataset(opts.data, "train")
    n_parts = sum((len(s) + 1) ** 2 for s in sentences)
    passes = ["--passes", str(opts.passes)] if opts.passes > 0 else []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        one = folder / f"{opts.data}-train-x1.conll"
        write_conll(one, sentences)
        text = one.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
        rows = []
        for k in counts:
            train = folder / f"{opts.data}-train-x{k}.conll"
            train.write_text(text * k, encoding="utf-8")
            peak, seconds, code = run(["parser", "train", "--train", str(train), "--out", str(folder / f"x{k}.npz"),
                                       *passes], folder)
            rows.append((k, k * len(sentences), k * n_parts, peak, seconds, code))
            print(f"x{k}: {k * len(sentences)} sentences, peak {peak:.0f} MB, {seconds:.0f} s", file=sys.stderr)
        named = None
        if opts.named:
            named = run(["parser", "train", "--data", opts.named, "--out", str(folder / f"{opts.named}.npz"),
                         *passes], folder)

    print(f"Parser training on `{opts.data}` train repeated k times "
          f"({'default pass limit' if opts.passes <= 0 else f'{opts.passes} pass(es) of the default trainer'}), one process per row.\n")
    print("| k | sentences | arc parts | peak RSS (MB) | seconds | exit |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k, n_sent, parts, peak, seconds, code in rows:
        print(f"| {k} | {n_sent:,} | {parts:,} | {peak:,.0f} | {seconds:,.0f} | {code} |")
    a, b = slope([r[1] / 1000.0 for r in rows], [r[3] for r in rows])
    print(f"\nGrowth: {a:.1f} MB per 1,000 sentences (least squares over {len(rows)} runs); "
          f"{b:.0f} MB at 0 sentences.")
    if named is not None:
        peak, seconds, code = named
        print(f"\n`egnlp parser train --data {opts.named}` ({' '.join(passes) or 'default settings'}): "
              f"peak RSS {peak:,.0f} MB, {seconds:,.0f} s, exit {code}.")


if __name__ == "__main__":
    main()
