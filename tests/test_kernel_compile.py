"""egnlp.base.kernel_compile: egnlp's functions compiled once per argument type, kernel-only helpers
linked only.

A probe module (written to a temporary folder, loaded under a name inside or outside ``egnlp``) has a
kernel that calls a kernel-only helper with three literals.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

import egnlp.features  # noqa: F401  (installs the rules when Numba loads)
from egnlp.base import kernel_compile

PROBE = """
from numba import njit


@njit(cache=True, no_cpython_wrapper=True)
def helper(x, k):
    return x * 2 + k


@njit(cache=True)
def kernel(values):
    total = 0
    for v in values:
        total += helper(v, 0) + helper(v, 1) + helper(v, 7)
    return total
"""

EXPECTED = sum(3 * 2 * v + 8 for v in range(5))


def load_probe(folder: Path, name: str) -> ModuleType:
    """The probe's source as module ``name`` (registered: Numba finds a kernel's module by its name)."""
    path = folder / f"{name.replace('.', '_')}.py"
    path.write_text(PROBE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_rules_are_in_place_once_numba_is_loaded() -> None:
    import numba  # noqa: F401
    from numba.core import cpu, dispatcher

    assert kernel_compile.install() is True
    assert "_install" in dispatcher.Dispatcher.get_call_template.__qualname__
    assert "_install" in cpu.CPUContext.get_executable.__qualname__


def test_an_egnlp_helper_compiles_once_for_its_literals_and_has_no_machine_code_of_its_own(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    ours = load_probe(tmp_path, "egnlp._kernel_compile_probe")
    theirs = load_probe(tmp_path, "kernel_compile_probe_elsewhere")
    try:
        for module in (ours, theirs):
            assert module.kernel(np.arange(5)) == EXPECTED
        # egnlp's helper: one compile for the int64 of the three literals, its IR linked into the kernel only
        assert len(ours.helper.signatures) == 1
        compiled = ours.helper.overloads[ours.helper.signatures[0]]
        assert getattr(compiled.library, kernel_compile.DEFERRED, None) is not None
        # outside egnlp, Numba's own rules: one compile per literal, each made into machine code
        assert len(theirs.helper.signatures) == 3
        assert all(getattr(theirs.helper.overloads[s].library, kernel_compile.DEFERRED, None) is None
                   for s in theirs.helper.signatures)
        # asked for its machine code, the helper's library makes it then
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        assert address != 0 and getattr(compiled.library, kernel_compile.DEFERRED, None) is None
        assert ours.kernel(np.arange(5)) == EXPECTED
    finally:
        for name in ("egnlp._kernel_compile_probe", "kernel_compile_probe_elsewhere"):
            sys.modules.pop(name, None)


def test_a_kernel_whose_helpers_were_linked_only_loads_from_the_cache_in_a_new_process(tmp_path: Path) -> None:
    """The first process compiles and caches the kernel (not the helper); the second loads the kernel from
    the cache and runs it (a library loaded from the cache was once taken for a helper's, and the kernel's
    entry point was null)."""
    path = tmp_path / "probe.py"
    path.write_text(PROBE, encoding="utf-8")
    code = ("import importlib.util, sys\nimport numpy as np\nimport egnlp.features\n"
            f"spec = importlib.util.spec_from_file_location('egnlp._probe', {str(path)!r})\n"
            "module = importlib.util.module_from_spec(spec)\nsys.modules['egnlp._probe'] = module\n"
            "spec.loader.exec_module(module)\n"
            "print(module.kernel(np.arange(5)), sum(module.kernel.stats.cache_hits.values()))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert [r.stdout.split() for r in runs] == [[str(EXPECTED), "0"], [str(EXPECTED), "1"]]
    cached = sorted(p.name.split(".")[1].split("-")[0] for p in (tmp_path / "cache").rglob("*.nbi"))
    assert cached == ["kernel"]  # the helper's code is in the kernel's
