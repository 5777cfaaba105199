"""Start-up tuning of the ``egnlp`` program's own process: a decoding command loads faster.

Nothing here changes a Python caller's process (typer's test runner, a
notebook): only the ``egnlp`` program calls :func:`own_process` first.
The tuning is Python's garbage collector paused while the imports and the
model load (then what they loaded frozen out of its sight), Numba's array
functions imported without SciPy's BLAS probe, and cached kernels loaded
without a refresh of Numba's compiler contexts. Measured on one parse of one
sentence: 0.17-0.23 s of collector time and 0.2-0.35 s of SciPy imports,
of 1.0-1.4 s in all.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Whether start_up() may tune the process (Python's garbage collector, Numba's first import): only in the
# egnlp program's own process (set by egnlp.cli.main), not in a Python caller's (typer's test runner, a
# notebook), whose collector and modules are its own.
_PROGRAM = {"owns_process": False}


def own_process() -> None:
    """Let :func:`start_up` tune the process: it is the ``egnlp`` program's."""
    _PROGRAM["owns_process"] = True


def _numba_without_blas_probe() -> None:
    """Import Numba's array functions with SciPy out of sight, when neither is loaded yet.

    A process's first Numba kernel imports ``numba.np.arraymath``, which probes for a BLAS at import time
    by importing ``scipy.linalg.cython_blas``: SciPy and its whole ``linalg`` package, 0.2-0.35 s and
    12 MiB, measured, in a command that parses one sentence in 1.0-1.4 s.  The probe only picks the
    inner product of ``np.correlate`` and ``np.convolve`` (BLAS, or Numba's own loop when the import
    fails), and no egnlp kernel calls them; ``np.dot`` and ``np.linalg`` import SciPy themselves when a
    kernel uses them.  A ``None`` entry in ``sys.modules`` makes an import of the name fail, and it is
    removed right after: later imports of SciPy (training's L-BFGS) load it as usual.
    """
    hidden = next((name for name in ("scipy", "scipy.linalg") if name not in sys.modules), None)
    if hidden is None or "numba.np.arraymath" in sys.modules:
        return
    sys.modules[hidden] = None  # type: ignore[assignment]
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        del sys.modules[hidden]


def _cached_kernels_without_refresh() -> None:
    """Let Numba load a cached kernel without first refreshing its compiler's contexts.

    Before it reads a kernel from its cache, Numba refreshes the typing and target contexts
    (``numba.core.caching.Cache.load_overload``): it imports and registers the implementations of
    everything it can compile (Python's built-in types, typed containers, NumPy's random generators,
    polynomials, dates, jitclass: about 60 modules), which a compiler needs and a kernel that is machine
    code already does not. The loaded kernel needs Numba's runtime (the NRT, whose functions it calls) and
    the modules its environment names, which the cache's loader imports itself. So the replacement starts
    the runtime and loads. A kernel that is not in the cache is compiled as before: Numba's compiler
    refreshes both contexts when it starts (``numba.core.compiler.CompilerBase``). Where this Numba lacks
    the methods it relies on, nothing is replaced.
    """
    from numba.core import caching
    from numba.core.runtime import rtsys

    cache = caching.Cache
    if getattr(cache.load_overload, "_egnlp", False) or not all(
            hasattr(cache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")):
        return

    def load_overload(self, sig, target_context):  # Numba's, less the contexts' refresh
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # the guard swallowed an error reading the cache: Numba then compiles

    load_overload._egnlp = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload


@contextmanager
def start_up() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a decoding command loads (its imports and the model),
    then the objects loaded frozen out of its sight (:func:`gc.freeze`) and the collector resumed; Numba's
    array functions imported without SciPy's BLAS (:func:`_numba_without_blas_probe`), and cached kernels
    loaded without a refresh of Numba's compiler (:func:`_cached_kernels_without_refresh`).

    Loading builds a few hundred thousand long-lived objects (Numba's type system and LLVM's bindings,
    SciPy's modules) and next to no garbage; the collector, run every 700 allocations, would walk them
    again and again: 0.17-0.23 s of the 1.2-1.4 s in which one sentence is parsed. Frozen, they are never
    walked; what the command allocates afterwards is collected as usual. The garbage there is on entry is
    collected first (a few milliseconds: only typer is loaded then), so that none of it is frozen.
    Nothing changes outside the egnlp program's own process (:func:`own_process`).
    """
    kernels_note()
    if not _PROGRAM["owns_process"] or not gc.isenabled():
        yield
        return
    gc.collect()
    gc.disable()
    try:
        _numba_without_blas_probe()
        _cached_kernels_without_refresh()
        yield
    finally:
        gc.freeze()
        gc.enable()


def kernels_note() -> None:
    """One line on stderr when no compiled kernel is cached yet (a fresh install, or sources changed): the
    first run compiles them, which takes a while with no other output. Only in the egnlp program's process."""
    from egnlp.kernel_cache import has_cached_kernels

    if _PROGRAM["owns_process"] and has_cached_kernels() is False:
        print("note: compiling egnlp's kernels for this machine (once: later runs load them from the cache)",
              file=sys.stderr)


def show_notes() -> None:
    """egnlp's warnings (:class:`~egnlp.base.errors.EgnlpWarning`) shown as one ``note:`` line on stderr."""
    import warnings

    from egnlp.base.errors import EgnlpWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if issubclass(category, EgnlpWarning):
            print(f"note: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
