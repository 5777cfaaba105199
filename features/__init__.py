"""features package."""

from egnlp.base.kernel_compile import install as _compile_rules

_compile_rules()  # before any of its kernels compiles: see egnlp.base.kernel_compile
