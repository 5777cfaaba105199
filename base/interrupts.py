"""Ctrl-C that never lands inside Numba's or llvmlite's own Python code.

Python runs a SIGINT handler between two bytecodes of the main thread, wherever they are: also while
Numba's dispatcher loads or compiles a kernel, and inside llvmlite's ctypes callbacks, which run while
LLVM loads machine code. A KeyboardInterrupt raised there is lost ("Exception ignored on calling ctypes
callback function", and the run goes on: 3 of 60 ``egnlp parser train`` runs interrupted while their
kernels loaded), comes out as ``SystemError: CPUDispatcher(...) returned a result with an exception
set``, or leaves LLVM's state broken (the process died of a segmentation fault twice in some 70 runs
interrupted at random; none in 210 with the interrupt put off as below).

:func:`interrupt_when_safe` raises KeyboardInterrupt only when no frame of Numba or llvmlite is on the
stack; otherwise it asks again :data:`RETRY_SECONDS` later (a SIGALRM timer calls the SIGINT handler in
force then, with the frame running then), until the interrupted code has left them.
:func:`safe_interrupts` makes it Ctrl-C's handler for a block: the ``egnlp`` program runs its commands in
one, and :func:`egnlp.training.records.interrupts_between_passes` calls it for a second Ctrl-C.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

RETRY_SECONDS = 0.02
COMPILER_PACKAGES = ("numba", "llvmlite")

_FOLDERS: list[tuple[str, ...]] = []  # the packages' folders, found once (without importing them)
_STATE = {"pending": False, "previous_alarm": None}  # an interrupt put off, and the SIGALRM handler it replaced


def compiler_folders() -> tuple[str, ...]:
    """The folders of the :data:`COMPILER_PACKAGES` (each ending in a path separator)."""
    if not _FOLDERS:
        found = []
        for name in COMPILER_PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is not None:
                found.extend(os.path.join(folder, "") for folder in spec.submodule_search_locations or ())
        _FOLDERS.append(tuple(found))
    return _FOLDERS[0]


def in_compiler(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a frame under it (its callers) runs code of Numba or llvmlite."""
    folders = compiler_folders()
    while frame is not None:
        if frame.f_code.co_filename.startswith(folders):
            return True
        frame = frame.f_back
    return False


def interrupt() -> NoReturn:
    """Raise KeyboardInterrupt for a Ctrl-C received, from code that is not Numba's; a retry that
    :func:`interrupt_when_safe` put off is dropped (one Ctrl-C, one KeyboardInterrupt)."""
    _cancel_retry()
    raise KeyboardInterrupt


def interrupt_when_safe(frame: FrameType | None) -> None:
    """Raise KeyboardInterrupt (:func:`interrupt`), unless ``frame`` (the one a signal handler was given)
    is in Numba's or llvmlite's code: then call the SIGINT handler in force :data:`RETRY_SECONDS` later
    instead."""
    if not in_compiler(frame):
        interrupt()
    if not _STATE["pending"]:
        previous = signal.signal(signal.SIGALRM, _retry)
        _STATE["previous_alarm"] = signal.SIG_DFL if previous is None else previous
        _STATE["pending"] = True
    signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)


def _retry(signum: int, frame: FrameType | None) -> None:
    """The timer's SIGALRM: Ctrl-C once more, through the SIGINT handler in force now (none when ignored)."""
    _cancel_retry()
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)


def _cancel_retry() -> None:
    if _STATE["pending"] and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, _STATE["previous_alarm"])
        _STATE["pending"], _STATE["previous_alarm"] = False, None


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    interrupt_when_safe(frame)


@contextmanager
def safe_interrupts(then: Any = None) -> Iterator[None]:
    """Within the block, Ctrl-C raises KeyboardInterrupt as Python's own handler does, but never inside
    Numba's or llvmlite's code (see the module docstring); after it, the SIGINT handler is ``then`` (None:
    the one before). An interrupt still put off when the block ends is raised then. Outside the main
    thread (where no signal handler can be set) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Any = signal.signal(signal.SIGINT, _on_interrupt)
    if then is None:
        then = signal.default_int_handler if previous is None else previous
    try:
        yield
    finally:
        pending = _STATE["pending"]
        _cancel_retry()
        signal.signal(signal.SIGINT, then)
    if pending:
        interrupt()
