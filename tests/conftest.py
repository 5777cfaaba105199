"""Session hooks and fixtures shared by the whole suite.

After pytest has reported, the process ends with pytest's own exit status
and skips the interpreter's teardown.  In about half of the runs that
compile every Numba kernel cold in one process, the assertion-enabled LLVM
inside llvmlite 0.50 aborts while freeing compiled code at interpreter exit
(SIGABRT, ``StringMap.cpp ... RemoveKey ... "Didn't find key?"``), after
every test has passed; a warm on-disk cache never showed it.  The exit
status would then be 134 instead of pytest's.  pytest-xdist's workers
(``-n auto`` in ``pyproject.toml``) end the same way: each has sent the
controller its last report (written and flushed) before this hook runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import egnlp  # noqa: F401  (egnlp.kernel_cache: stale cached kernels are dropped here, before any worker starts)
from egnlp.corpora import load_dataset

# The UD treebank files of the data sets pt-bosque and nl-alpino: beside the checkout unless set.
os.environ.setdefault("EGNLP_UD_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data" / "ud"))


@pytest.fixture(scope="module")
def es_train():
    """The training split of the data set ``es`` (loaded once per test module)."""
    return load_dataset("es", "train")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    status = config.stash.get(_STATUS, None)
    if status is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


_STATUS = pytest.StashKey[int]()
