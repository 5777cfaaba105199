"""How Numba compiles egnlp's kernels: once per argument type, and kernel-only helpers only where used.

A process that finds no kernel in Numba's cache (the first run after an
install, or after the sources changed: :mod:`egnlp.kernel_cache`) compiles
every kernel its command calls, and the functions they call. Three things
of Numba's make that slower than it need be; :func:`install` changes them
for egnlp's own functions and Numba's implementations of NumPy's
(``np.empty``, ``np.zeros``), nothing else:

- **One compile per argument type, not per literal.** A kernel calling a
  function with a constant (``known_bits(rows, k, 0)``) has Numba compile
  that function for the literal value ``0``, apart from the one for any
  ``int64``: 16 functions of a first parse were compiled twice or more, and
  the labeler's key helper, called with 40 literals, had been inlined to
  spare 40 compiles. Calls of egnlp's functions are typed with the
  literals' plain types (:func:`numba.core.types.unliteral`); LLVM still
  folds the constants once it inlines the call. A function that cannot be
  typed so (one that needs the literal) is typed as Numba would.
- **A kernel-only helper is not made into machine code of its own.** Numba
  compiles each function a kernel calls to LLVM IR, optimises that IR as a
  module and emits machine code for it, then links the IR into every
  caller, whose module is optimised again with it and made into machine
  code: for a function that only kernels call (``njit(...,
  no_cpython_wrapper=True)``, and Numba's own implementations, which have
  no Python entry either) the first optimisation and the machine code are
  never used. Its library keeps its IR, checked and with its own callees
  linked in, and is closed; the optimisation and machine code are made if
  something asks for them (a pointer to one of its functions, its object
  code), and it is not written to Numba's cache (its code is in its
  callers' cached machine code).
- **No C-callable wrapper.** Numba gives every compiled function a wrapper
  with the C calling convention, for code that takes its address (a
  ``cfunc``, a first-class function argument); egnlp never does.

Measured on the first parse of one sentence with every cached kernel
dropped (the pt_bosque model of ``parser train`` with its defaults; CPU time
of the compiles in the process, one run each on a shared machine): 15.3 s
before; 14.3 s with calls typed by plain types; 13.0 s with the labeler's
key helper no longer inlined; 11.2 s with helpers linked only; 10.3 s with
the arc scorer and Eisner's chart fillers made kernel-only helpers (they had
Python entries no Python code called); 9.5 s without C wrappers. The whole
process: ``benchmarks/first_run.py`` (docs/results.md, "The first parse
after an install").

Where this Numba lacks what the changes rely on, nothing is changed.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

# The modules whose functions are compiled this way: egnlp's, and Numba's own implementations.
PREFIXES = ("egnlp.", "numba.")
_STATE: dict[str, Any] = {"installed": None}
DEFERRED = "_egnlp_deferred"  # on a kernel-only library: (environment name, environment) until finished


def install() -> bool | None:
    """Make the three changes once a process: now if Numba is loaded (whether they are in place), else when it is
    (None): a command that compiles nothing, such as ``egnlp --help``, does not load Numba for them."""
    if _STATE["installed"] is None:
        if "numba" not in sys.modules:
            if not any(isinstance(finder, _AfterNumba) for finder in sys.meta_path):
                sys.meta_path.insert(0, _AfterNumba())
            return None
        try:
            _STATE["installed"] = _install()
        except (ImportError, AttributeError):
            _STATE["installed"] = False
    return bool(_STATE["installed"])


class _AfterNumba(importlib.abc.MetaPathFinder):
    """Finds ``numba`` as Python would, and has its loader call :func:`install` once the package has run."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "numba":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = None
        for finder in list(sys.meta_path):  # the finders after this one, as the import system would ask them
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: Any) -> None:
            run(module)
            install()

        loader.exec_module = exec_module  # this loader's, for numba/__init__.py only
        return spec


def _install() -> bool:
    from numba import _dynfunc
    from numba.core import caching, codegen, cpu, dispatcher, errors, types

    library = codegen.CPUCodeLibrary
    needed = [(dispatcher.Dispatcher, "get_call_template"), (cpu.CPUContext, "get_executable"),
              (cpu.CPUContext, "get_env_name"), (codegen.JITCodeLibrary, "get_pointer_to_function"),
              (library, "serialize_using_object_code"), (library, "_get_module_for_linking"),
              (library, "_optimize_final_module"), (library, "_finalize_final_module"),
              (caching.Cache, "save_overload"), (_dynfunc, "make_function"),
              (dispatcher, "_FunctionCompiler")]
    if not all(hasattr(owner, name) for owner, name in needed) or not hasattr(dispatcher._FunctionCompiler,
                                                                                "_customize_flags"):
        return False

    call_template = dispatcher.Dispatcher.get_call_template

    def get_call_template(self: Any, args: Any, kws: Any) -> Any:
        if getattr(self.py_func, "__module__", "").startswith("egnlp."):
            plain = tuple(types.unliteral(a) for a in args)
            plain_kws = {key: types.unliteral(value) for key, value in kws.items()}
            if plain != tuple(args) or plain_kws != dict(kws):
                try:
                    return call_template(self, plain, plain_kws)
                except errors.TypingError:  # a function that needs the literal: typed as Numba would
                    pass
        return call_template(self, args, kws)

    get_executable = cpu.CPUContext.get_executable

    def get_executable_once(self: Any, library: Any, fndesc: Any, env: Any) -> Any:
        if not _kernel_only(library, fndesc):
            return get_executable(self, library, fndesc, env)
        _link_only(library)
        setattr(library, DEFERRED, (self.get_env_name(fndesc), env))
        return _dynfunc.make_function(fndesc.lookup_module(), fndesc.qualname.split(".")[-1],
                                      f"compiled wrapper for {fndesc.qualname!r}", 0, env, (library,))

    pointer = codegen.JITCodeLibrary.get_pointer_to_function

    def get_pointer_to_function(self: Any, name: str) -> int:
        finish(self)
        return pointer(self, name)

    serialize = codegen.CPUCodeLibrary.serialize_using_object_code

    def serialize_using_object_code(self: Any) -> Any:
        finish(self)
        return serialize(self)

    save_overload = caching.Cache.save_overload

    def save_unless_deferred(self: Any, sig: Any, data: Any) -> Any:
        if getattr(getattr(data, "library", None), DEFERRED, None) is not None:
            return None  # its code lives in its callers' cached machine code
        return save_overload(self, sig, data)

    customize_flags = dispatcher._FunctionCompiler._customize_flags

    def without_cfunc_wrapper(self: Any, flags: Any) -> Any:
        flags = customize_flags(self, flags)
        if getattr(self.py_func, "__module__", "").startswith(PREFIXES):
            flags.no_cfunc_wrapper = True
        return flags

    dispatcher.Dispatcher.get_call_template = get_call_template
    dispatcher._FunctionCompiler._customize_flags = without_cfunc_wrapper
    cpu.CPUContext.get_executable = get_executable_once
    codegen.JITCodeLibrary.get_pointer_to_function = get_pointer_to_function
    codegen.CPUCodeLibrary.serialize_using_object_code = serialize_using_object_code
    caching.Cache.save_overload = save_unless_deferred
    return True


def _kernel_only(library: Any, fndesc: Any) -> bool:
    """Whether a function just compiled (its library not yet finalized: not one loaded from the cache, whose
    functions are machine code already) has no Python entry (no CPython wrapper in its library) and is
    egnlp's or Numba's own."""
    if library._finalized or not str(getattr(fndesc, "modname", "") or "").startswith(PREFIXES):
        return False
    try:
        library._final_module.get_function(fndesc.llvm_cpython_wrapper_name)
    except NameError:
        return True
    return False


def _link_only(library: Any) -> None:
    """What Numba's ``finalize`` does to a library less the optimisation and the machine code: its callees'
    IR linked in, checked, and the library closed."""
    seen = set()
    for callee in library._linking_libraries:
        if callee not in seen:
            seen.add(callee)
            library._reload_init.update(callee._reload_init)
            library._final_module.link_in(callee._get_module_for_linking(), preserve=True)
    library._final_module.verify()
    library._finalized = True


def finish(library: Any) -> None:
    """The module optimisation and machine code that a kernel-only library skipped, made now (something
    asks for its machine code); nothing for any other library."""
    deferred = library.__dict__.pop(DEFERRED, None)
    if deferred is None:
        return
    library._optimize_final_module()
    library._final_module.verify()
    library._finalize_final_module()
    env_name, env = deferred
    library.codegen.set_env(env_name, env)
