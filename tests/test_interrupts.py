"""Ctrl-C never lands inside Numba's or llvmlite's Python code (egnlp.base.interrupts), and a SystemError
that Ctrl-C caused is one ``interrupted`` line on the command line.

The signals here are real (``signal.raise_signal``) and raised from inside Numba's ``typeof``, which calls
back into Python for an object's ``_numba_type_``: Python runs the handler there, in a frame whose callers
are Numba's, as it does while Numba loads or compiles a kernel. The end-to-end check (SIGINT sent to a
real ``egnlp parser train`` at points spread over its run) is in ``test_cli_conventions.py``.
"""

from __future__ import annotations

import signal
import sys
import time

import numba
import pytest

from cli_helpers import run
from egnlp.base.interrupts import compiler_folders, in_compiler, safe_interrupts
from egnlp.corpora import load_dataset, write_conll
from egnlp.training.records import interrupts_between_passes


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Each test starts with Python's own SIGINT handler, as a command's process does. A pytest-xdist worker
    can run with SIGINT ignored (one of the two did for most of a run of the suite, its tests seeing
    SIG_IGN from the first), and the blocks under test restore the handler they found."""
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, found)


class CtrlCInNumba:
    """An object whose Numba type is asked from inside Numba's typeof: there it sends itself SIGINT
    ``times`` times and records whether its frame is in Numba's code."""

    def __init__(self, times: int = 1) -> None:
        self.times = times
        self.inside: list[bool] = []

    @property
    def _numba_type_(self):
        self.inside.append(in_compiler(sys._getframe()))
        for _ in range(self.times):
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))  # bytecodes: Python runs the handler here, inside Numba's typeof
        return numba.types.int64


def _wait_for_interrupt(seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.001)


def _outside_numba(caught: pytest.ExceptionInfo) -> bool:
    return not any(str(entry.path).startswith(compiler_folders()) for entry in caught.traceback)


def test_ctrl_c_inside_numba_code_is_raised_once_it_is_left() -> None:
    alarm = signal.getsignal(signal.SIGALRM)
    probe = CtrlCInNumba()
    with pytest.raises(KeyboardInterrupt) as caught:
        with safe_interrupts():
            assert numba.typeof(probe) == numba.types.int64  # the interrupt waited: typeof ended
            _wait_for_interrupt()
    assert probe.inside == [True] and not in_compiler(sys._getframe())
    assert _outside_numba(caught) and caught.traceback[-1].name == "interrupt"
    assert signal.getsignal(signal.SIGALRM) is alarm and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupt_put_off_when_the_block_ends_is_raised_then() -> None:
    with pytest.raises(KeyboardInterrupt):
        with safe_interrupts():
            numba.typeof(CtrlCInNumba())  # no bytecode of the block runs after it
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with safe_interrupts(then=signal.SIG_IGN):
        pass
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_second_ctrl_c_in_training_waits_for_numba_too() -> None:
    """Between passes: the first Ctrl-C is kept for the end of the pass, a second one stops at once, but
    not inside Numba's code."""
    probe = CtrlCInNumba(times=2)
    with pytest.raises(KeyboardInterrupt) as caught:
        with interrupts_between_passes():
            numba.typeof(probe)
            _wait_for_interrupt()
    assert probe.inside == [True] and _outside_numba(caught)
    with pytest.raises(KeyboardInterrupt):  # one Ctrl-C: raised when the block ends
        with interrupts_between_passes():
            numba.typeof(CtrlCInNumba())
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_system_error_of_an_interrupt_at_any_depth_is_one_line(tmp_path, monkeypatch) -> None:
    """Nested kernel calls chain SystemErrors before the KeyboardInterrupt; any other SystemError is a bug."""
    from egnlp import parser_training

    train = tmp_path / "train.conll"
    write_conll(train, load_dataset("es", "train")[:5])

    def nested(*args, **kwargs):
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as stop:
                raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from stop
        except SystemError as inner:
            raise SystemError("CPUDispatcher(<function g>) returned a result with an exception set") from inner

    monkeypatch.setattr(parser_training, "labeler_for", nested)
    result = run("parser", "train", "--train", train, "--passes", 1, "-o", tmp_path / "m.npz", "-q")
    assert result.exit_code == 130 and result.stderr.splitlines() == ["interrupted"], result.stderr

    def other(*args, **kwargs):
        raise SystemError("a bug")

    monkeypatch.setattr(parser_training, "labeler_for", other)
    result = run("parser", "train", "--train", train, "--passes", 1, "-o", tmp_path / "m.npz", "-q")
    assert isinstance(result.exception, SystemError) and not (tmp_path / "m.npz").exists()
