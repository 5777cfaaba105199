"""Start-up tuning of the ``egnlp`` program's own process: a decoding command loads faster.

Nothing here changes a Python caller's process (typer's test runner, a
notebook): only the ``egnlp`` program calls :func:`own_process` first.
The tuning is Python's garbage collector paused while the imports and the
model load (then what they loaded frozen out of its sight), Numba's array
functions imported without SciPy's BLAS probe, and cached kernels loaded
without a refresh of Numba's compiler contexts. Measured on one parse of one
sentence: 0.17-0.23 s of collector time and 0.2-0.35 s of SciPy imports,
of 1.0-1.4 s in all. And the pages of LLVM's library that only its start
used are let go (:func:`release_llvm_pages`): parsing pt_bosque dev peaked at
208 MiB resident with them, and at 152 MiB without them.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any
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


MADV_DONTNEED = 4  # <sys/mman.h> on Linux


def release_llvm_pages() -> int:
    """Unmap the resident pages of LLVM's shared library (llvmlite's) that hold only the file's own bytes;
    the bytes released (0 where this cannot be done: not Linux, or llvmlite not loaded).

    Loading the library runs LLVM's static constructors all over its 80 MB of code, and the first cached
    kernel's load starts LLVM's code generator and linker: the kernel maps whole runs of the file's pages
    around each one touched, and they stay in the process's resident set though most are never run
    again (parsing pt_bosque dev: 38 MiB mapped by the import, 49 MiB more by the first kernel's load,
    about 10 MiB of them touched again by the parse). ``madvise(MADV_DONTNEED)`` on a read-only mapping
    of the file unmaps its pages from this process only: they stay in the page cache, and a page touched
    later is mapped again from it. Only mappings that cannot be written and hold no page of the process's
    own (``Anonymous: 0 kB`` in ``/proc/self/smaps``: no copy-on-write page, such as relocated data) are
    touched, so what is read afterwards is what the file holds.
    """
    library = sys.modules.get("llvmlite.binding.ffi")
    try:
        handle = getattr(library.lib, "_lib_handle", None) if library is not None else None  # None: not loaded
        if handle is None or not os.path.exists("/proc/self/smaps"):
            return 0
        path = os.path.realpath(handle._name)
        regions, region = [], None
        with open("/proc/self/smaps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 5 and "-" in fields[0] and not fields[0].endswith(":"):
                    region = fields if len(fields) == 6 and "w" not in fields[1] and fields[5] == path else None
                elif region is not None and fields[0] == "Anonymous:":
                    if fields[1] == "0":
                        regions.append(tuple(int(bound, 16) for bound in region[0].split("-")))
                    region = None
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        return sum(end - start for start, end in regions if libc.madvise(start, end - start, MADV_DONTNEED) == 0)
    except (OSError, AttributeError, ValueError):
        return 0


@contextmanager
def start_up() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a decoding command loads (its imports and the model),
    then the objects loaded frozen out of its sight (:func:`gc.freeze`) and the collector resumed; Numba's
    array functions imported without SciPy's BLAS (:func:`_numba_without_blas_probe`), and cached kernels
    loaded without a refresh of Numba's compiler (:func:`_cached_kernels_without_refresh`); the pages of
    LLVM's library that its start used are let go after the imports and again after the load
    (:func:`release_llvm_pages`).

    Loading builds a few hundred thousand long-lived objects (Numba's type system and LLVM's bindings,
    SciPy's modules) and next to no garbage; the collector, run every 700 allocations, would walk them
    again and again: 0.17-0.23 s of the 1.2-1.4 s in which one sentence is parsed. Frozen, they are never
    walked; what the command allocates afterwards is collected as usual. The garbage there is on entry is
    collected first (a few milliseconds: only typer is loaded then), so that none of it is frozen.
    Nothing changes outside the egnlp program's own process (:func:`own_process`).
    """
    if not _PROGRAM["owns_process"] or not gc.isenabled():
        kernels_note()
        yield
        return
    gc.collect()
    gc.disable()
    try:
        kernels_note()
        _numba_without_blas_probe()
        _cached_kernels_without_refresh()
        release_llvm_pages()
        yield
    finally:
        gc.freeze()
        gc.enable()
        release_llvm_pages()


COMPILING_NOTE = "note: compiling egnlp's kernels for this machine (once: later runs load them from the cache)"


def kernels_note() -> Any:
    """From now on, one line on stderr (:data:`COMPILING_NOTE`) when this process starts compiling a kernel:
    a fresh install, sources changed (:mod:`egnlp.kernel_cache`), or a kernel the cache lacks; the compile
    takes a while with no other output. Said once a process, and never when every kernel loads from the
    cache: Numba reports a ``numba:compile`` event only for a kernel it compiles (a cached one returns
    before). Only in the egnlp program's process; the listener registered (None: none, or one was already)."""
    if not _PROGRAM["owns_process"] or _NOTE["listener"] is not None:
        return None
    from numba.core import event

    class CompilingNote(event.Listener):
        def on_start(self, ev: Any) -> None:
            if _PROGRAM["owns_process"] and not _NOTE["said"]:
                _NOTE["said"] = True
                print(COMPILING_NOTE, file=sys.stderr, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    listener = _NOTE["listener"] = CompilingNote()
    event.register("numba:compile", listener)
    return listener


_NOTE: dict[str, Any] = {"listener": None, "said": False}


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
