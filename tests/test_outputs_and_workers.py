"""Nothing left running, nothing lost: worker processes end with their parent, and every output of
egnlp follows one set of rules (:func:`egnlp.base.files.write_pieces_atomic` and its siblings).

- ``kill -9`` of a ``parser parse --jobs 2`` leaves no worker alive and no temporary file; a pool's
  workers end with their parent with the kernel's parent-death signal and with the polling thread
  used where that signal is missing (:mod:`egnlp.base.workers`).
- A regular file is replaced atomically, with the mode ``0o666`` less the umask; on Linux its
  temporary file has no name while it is written (``O_TMPFILE``), so a killed writer leaves nothing.
- ``-o FIFO`` writes into the FIFO, ``-o SYMLINK`` writes the file the link leads to and keeps the
  link, ``-o /dev/stdout`` writes to the process's stdout.
- Missing folders of an output are created by every command; a path through a regular file is one
  ``error:`` line naming it.

Processes are watched through ``/proc`` (Linux only; psutil is not a dependency); every wait is a
poll with a generous deadline, never a fixed sleep.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import assert_ok, error_line, run
from egnlp import train_parser
from egnlp.base import files
from egnlp.base.errors import CorpusError, ModelError
from egnlp.base.files import read_npz, write_npz_atomic, write_pieces_atomic, write_text_atomic
from egnlp.base.workers import PARENT_POLL_SECONDS
from egnlp.corpora import format_conll, load_dataset
from egnlp.tagger_training import train_crf_tagger

LINUX = sys.platform.startswith("linux")
linux_only = pytest.mark.skipif(not LINUX, reason="processes are watched through Linux's /proc")
REPEATS = 40  # the es dev split 40 times: 11,800 sentences, ten pieces, about 40 s of parsing on two cores
DEADLINE = 3.0  # seconds for killed processes' workers to end (they end in milliseconds)
START_DEADLINE = 300.0  # seconds for a command to start its workers (a cold Numba cache compiles first)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outputs")


@pytest.fixture(scope="module")
def models(folder: Path) -> dict[str, Path]:
    """A tiny parser and a tiny CRF POS tagger (``es``, 30 sentences, one pass), an ``es`` dev file, a
    training file of 30 sentences and a large input (the dev file repeated)."""
    train = load_dataset("es", "train")[:30]
    paths = {"parser": folder / "parser.npz", "tagger": folder / "tagger.npz", "dev": folder / "dev.conll",
             "train": folder / "train.conll", "big": folder / "big.conll"}
    train_parser(train, max_passes=1)[0].save(paths["parser"])
    train_crf_tagger([s.forms for s in train], [s.pos for s in train], max_passes=1)[0].save(paths["tagger"])
    dev = format_conll(load_dataset("es", "dev"))
    paths["dev"].write_text(dev, encoding="utf-8")
    paths["train"].write_text(format_conll(train), encoding="utf-8")
    paths["big"].write_text(dev * REPEATS, encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def parsed_dev(models: dict[str, Path], folder: Path) -> bytes:
    """The parse of the dev file written to a regular file: what every other output must hold."""
    out = folder / "reference.conll"
    assert_ok(run("parser", "parse", models["parser"], models["dev"], "-o", out, "--jobs", 1, "--quiet"))
    return out.read_bytes()


# --- processes, through /proc -----------------------------------------------------------------------


def process_status(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time) of a process, None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ..., starttime (22nd field)
    return int(fields[1]), fields[0], int(fields[19])


def children(pid: int) -> dict[int, int]:
    """The live children of process ``pid``: pid -> start time."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            status = process_status(int(name))
            if status is not None and status[0] == pid and status[1] != "Z":
                found[int(name)] = status[2]
    return found


def alive(processes: dict[int, int]) -> list[int]:
    """The processes of ``processes`` (pid -> start time) still running: neither gone nor a zombie."""
    out = []
    for pid, started in processes.items():
        status = process_status(pid)
        if status is not None and status[1] not in "ZX" and status[2] == started:
            out.append(pid)
    return out


def poll(condition, seconds: float) -> bool:
    """Whether ``condition()`` turns true within ``seconds`` (checked every 20 ms)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_for_workers(process: subprocess.Popen, count: int) -> dict[int, int]:
    """The ``count`` workers of ``process`` once they all run (the test fails if it ends first)."""
    found: dict[int, int] = {}

    def started() -> bool:
        found.clear()
        found.update(children(process.pid))
        return len(found) >= count or process.poll() is not None

    assert poll(started, START_DEADLINE), f"no {count} workers after {START_DEADLINE} s"
    assert process.poll() is None, f"the command ended (status {process.returncode}) before its workers were seen"
    return found


def unnamed_files_work(where: Path) -> bool:
    """Whether the file system of ``where`` makes unnamed temporary files (what the writer will do)."""
    flag = getattr(os, "O_TMPFILE", None)
    if not LINUX or flag is None:
        return False
    try:
        os.close(os.open(where, flag | os.O_RDWR, 0o600))
    except OSError as error:
        assert error.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL)
        return False
    return True


def temporaries(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.*.tmp"))


def unlocked(path: Path) -> bool:
    import fcntl

    with open(path, "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True


# --- workers end with their parent --------------------------------------------------------------------


@linux_only
def test_kill_9_of_a_parse_leaves_no_worker_and_no_temporary_file(models: dict[str, Path], folder: Path) -> None:
    out = folder / "killed" / "parsed.conll"  # its folder is created by the command
    process = subprocess.Popen([sys.executable, "-m", "egnlp", "parser", "parse", models["parser"], models["big"],
                                "-o", out, "--jobs", "2", "--quiet"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        workers = wait_for_workers(process, 2)
        assert len(alive(workers)) == 2
    finally:
        process.kill()
        _, stderr = process.communicate()
    assert process.returncode == -signal.SIGKILL, stderr.decode(errors="replace")
    assert poll(lambda: not alive(workers), DEADLINE), f"workers {alive(workers)} outlived their parent"
    assert not out.exists()  # nothing half-written carries the output's name
    if unnamed_files_work(out.parent):
        assert poll(lambda: not temporaries(out.parent, out.name), DEADLINE), temporaries(out.parent, out.name)
    else:  # a named temporary file stays; its lock went with the workers, so the next write removes it
        assert all(unlocked(path) for path in temporaries(out.parent, out.name))
        write_text_atomic(out, "next\n")
        assert not temporaries(out.parent, out.name)


POOL = """
import os, sys, time
from egnlp.base import workers
if sys.argv[1] == "polling":
    workers._set_parent_death_signal = lambda: False  # as where prctl is missing: the polling thread
PARENT = os.getpid()
def slow(model, items):
    if os.getpid() != PARENT:
        time.sleep(600)
    return list(items)
def slow_piece(model, piece):
    time.sleep(600)
if sys.argv[2] == "map_blocks":
    workers.map_blocks(slow, None, range(200), jobs=2)
else:
    list(workers.map_pieces(slow_piece, None, range(10), jobs=2))
"""


@linux_only
@pytest.mark.parametrize("how", ["prctl", "polling"])
@pytest.mark.parametrize("pool", ["map_blocks", "map_pieces"])
def test_pool_workers_end_with_their_parent(how: str, pool: str) -> None:
    process = subprocess.Popen([sys.executable, "-c", POOL, how, pool], stdin=subprocess.DEVNULL)
    try:
        workers = wait_for_workers(process, 2)
    finally:
        process.kill()
        process.wait()
    seconds = DEADLINE + (PARENT_POLL_SECONDS if how == "polling" else 0.0)
    assert poll(lambda: not alive(workers), seconds), f"workers {alive(workers)} outlived their parent"


@linux_only
def test_a_worker_whose_parent_died_before_prctl_ends_at_once() -> None:
    """The race of a parent dying between the fork and the prctl: the worker sees another parent."""
    from egnlp.base.workers import _die_with_parent

    pid = os.fork()
    if pid == 0:  # the child: told its parent was a process that is not its parent now
        try:
            _die_with_parent(os.getppid() + 1_000_000)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1


# --- atomic writes: modes, unnamed temporary files -------------------------------------------------------


@pytest.fixture(params=["unnamed", "named"])
def temporary_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Both ways of writing a temporary file: unnamed (where the file system has them) and named."""
    if request.param == "unnamed" and not unnamed_files_work(tmp_path):
        pytest.skip("no O_TMPFILE here")
    if request.param == "named":
        monkeypatch.setattr(files, "_O_TMPFILE", None)
    return request.param


def test_a_written_file_has_the_mode_0666_less_the_umask(temporary_kind: str, tmp_path: Path) -> None:
    target = tmp_path / "out.conll"
    previous = os.umask(0o027)
    try:
        write_text_atomic(target, "new\n")
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        target.chmod(0o600)  # a replaced file's mode is not kept: the new file's is the umask's, as before
        write_npz_atomic(target, {"w": np.zeros(3)}, {"kind": "k", "format_version": 1})
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(previous)
    assert read_npz(target, "k", 1)[0]["w"].tolist() == [0.0, 0.0, 0.0]
    assert os.listdir(tmp_path) == ["out.conll"]


def test_a_failed_write_leaves_the_file_and_no_temporary(temporary_kind: str, tmp_path: Path) -> None:
    target = tmp_path / "out.conll"
    target.write_text("old\n", encoding="utf-8")

    def pieces():
        yield "half"
        raise CorpusError("x.conll:3: a bad line")

    with pytest.raises(CorpusError, match="a bad line"):
        write_pieces_atomic(target, pieces())
    assert target.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["out.conll"]


WRITER = """
import sys, time
from pathlib import Path
from egnlp.base import files
def slow(handle):
    handle.write(b"partial")
    handle.flush()
    print("writing", flush=True)
    time.sleep(600)
files._write_output(Path(sys.argv[1]), slow)
"""


@linux_only
def test_kill_9_of_a_writer_with_an_unnamed_file_leaves_nothing(tmp_path: Path) -> None:
    if not unnamed_files_work(tmp_path):
        pytest.skip("no O_TMPFILE here")
    target = tmp_path / "killed.conll"
    target.write_text("old\n", encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "writing\n"
        assert os.listdir(tmp_path) == ["killed.conll"]  # being written, and no name for it
    finally:
        writer.kill()
        writer.wait()
    assert os.listdir(tmp_path) == ["killed.conll"]
    assert target.read_text(encoding="utf-8") == "old\n"


# --- special files as outputs ---------------------------------------------------------------------------


def read_fifo_in_a_thread(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A thread that opens the FIFO ``path`` and reads it to its end; the bytes land in the list."""
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_out_to_a_fifo_writes_into_it(models: dict[str, Path], parsed_dev: bytes, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    thread, got = read_fifo_in_a_thread(fifo)
    assert_ok(run("parser", "parse", models["parser"], models["dev"], "-o", fifo, "--jobs", 1, "--quiet"))
    thread.join(60)
    assert got == [parsed_dev]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not replaced by a regular file
    assert os.listdir(tmp_path) == ["fifo"]
    # a model file too: it is built in memory (it is written by seeking back), then sent
    thread, got = read_fifo_in_a_thread(fifo)
    write_npz_atomic(fifo, {"w": np.arange(4.0)}, {"kind": "k", "format_version": 1})
    thread.join(60)
    copy = tmp_path / "copy.npz"
    copy.write_bytes(got[0])
    assert read_npz(copy, "k", 1)[0]["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_out_to_a_symlink_writes_its_target(models: dict[str, Path], parsed_dev: bytes, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "parsed.conll"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.conll"
    link.symlink_to(Path("real") / "parsed.conll")  # relative, as ln -s makes them
    assert_ok(run("parser", "parse", models["parser"], models["dev"], "-o", link, "--jobs", 1, "--quiet"))
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "parsed.conll")
    assert target.read_bytes() == parsed_dev
    # a link to a missing file (in a missing folder): the file is made where the link leads
    dangling = tmp_path / "dangling.npz"
    dangling.symlink_to(tmp_path / "models" / "m.npz")
    write_npz_atomic(dangling, {"w": np.ones(2)}, {"kind": "k", "format_version": 1})
    assert dangling.is_symlink() and (tmp_path / "models" / "m.npz").is_file()
    assert sorted(os.listdir(tmp_path)) == ["dangling.npz", "link.conll", "models", "real"]
    assert os.listdir(tmp_path / "real") == ["parsed.conll"]
    # a link to a folder is a folder; a loop of links is one line
    (tmp_path / "to-folder").symlink_to(tmp_path / "real")
    with pytest.raises(CorpusError, match="is a folder, not a file"):
        write_text_atomic(tmp_path / "to-folder", "x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(CorpusError, match=r"loop: cannot write \(Too many levels of symbolic links\)"):
        write_text_atomic(tmp_path / "loop", "x")


@linux_only
@pytest.mark.parametrize("stdout", ["pipe", "file"])
def test_out_to_dev_stdout_writes_to_stdout(models: dict[str, Path], parsed_dev: bytes, tmp_path: Path,
                                            stdout: str) -> None:
    command = [sys.executable, "-m", "egnlp", "parser", "parse", models["parser"], models["dev"], "-o", "/dev/stdout",
               "--jobs", "1", "--quiet"]
    if stdout == "pipe":
        result = subprocess.run(command, capture_output=True, timeout=600)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        assert result.stdout == parsed_dev
    else:  # stdout is a regular file: it is written through the descriptor, not renamed over
        captured = tmp_path / "captured.conll"
        with open(captured, "wb") as handle:
            result = subprocess.run(command, stdout=handle, stderr=subprocess.PIPE, timeout=600)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        assert captured.read_bytes() == parsed_dev
        assert os.listdir(tmp_path) == ["captured.conll"]


def test_out_to_a_character_device_leaves_it_a_device(models: dict[str, Path], tmp_path: Path) -> None:
    """A null device of the test's own (``/dev/null`` itself is shared with every other process)."""
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # Linux's null device
        os.close(os.open(device, os.O_WRONLY))
    except (AttributeError, OSError):
        pytest.skip("cannot make and open a device node here (not root, or a nodev mount)")
    assert_ok(run("parser", "parse", models["parser"], models["dev"], "-o", device, "--jobs", 1, "--quiet"))
    write_npz_atomic(device, {"w": np.ones(2)}, {"kind": "k", "format_version": 1})
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert os.listdir(tmp_path) == ["null"]


# --- one folder rule ----------------------------------------------------------------------------------------


def test_every_command_creates_the_missing_folders_of_its_output(models: dict[str, Path], tmp_path: Path) -> None:
    outputs = {
        "parse": tmp_path / "a" / "b" / "parsed.conll",
        "tag": tmp_path / "c" / "tagged.conll",
        "parser train": tmp_path / "d" / "e" / "parser.npz",
        "tagger train": tmp_path / "f" / "tagger.npz",
        "export": tmp_path / "g" / "dev.conll",
    }
    assert_ok(run("parser", "parse", models["parser"], models["dev"], "-o", outputs["parse"], "--jobs", 1, "-q"))
    assert_ok(run("tagger", "tag", models["tagger"], models["dev"], "-o", outputs["tag"], "--jobs", 1, "-q"))
    assert_ok(run("parser", "train", "--train", models["train"], "--out", outputs["parser train"], "--passes", 1,
                  "-q"))
    assert_ok(run("tagger", "train", "--train", models["train"], "--out", outputs["tagger train"], "--passes", 1,
                  "-q"))
    assert_ok(run("data", "export", "es", "dev", "-o", outputs["export"], "-q"))
    for path in outputs.values():
        assert path.is_file() and path.stat().st_size > 0, path


def test_a_path_through_a_file_is_one_line_naming_it(models: dict[str, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder\n", encoding="utf-8")
    out = blocker / "sub" / "parsed.conll"
    line = error_line(run("parser", "parse", models["parser"], models["dev"], "-o", out, "--jobs", 1, "-q"))
    assert line == f"error: {out}: cannot write ({blocker} is not a folder)"
    model = blocker / "m.npz"
    line = error_line(run("parser", "train", "--train", models["train"], "--out", model, "--passes", 1, "-q"))
    assert line == f"error: {model}: cannot write ({blocker} is not a folder)"
    with pytest.raises(ModelError, match=f"cannot write \\({blocker} is not a folder\\)"):
        write_npz_atomic(model, {"w": np.ones(2)}, {"kind": "k", "format_version": 1})
    assert os.listdir(tmp_path) == ["notes.txt"]
