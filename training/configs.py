"""The trainers' settings: one frozen, validated dataclass per trainer, light to import.

A config is the whole of a trainer's settings; :mod:`egnlp.training.registry` names the config of each
trainer, and :mod:`egnlp.settings` builds them from a job's settings. This module imports nothing but
the standard library and egnlp's errors, so that the command line can show every default and check
every value without loading NumPy or the Numba kernels. A value out of range is a
:class:`~egnlp.base.errors.SettingsError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from egnlp.base.errors import SettingsError

# Example orders of the online trainers (EG, BCFW): a fresh permutation per pass, 0..n-1, or n draws in
# proportion to each example's share of the duality gap at the last record (``gap_order``).
ORDERS = ("random", "cyclic", "gap")
# The step rules of excessive gap reduction (see :mod:`egnlp.training.egr`).
STEPS = ("paper", "adaptive")


def check_budget(*, C: float | None = None, max_passes: int | None = None, tol: float | None = None,
                 max_seconds: float | None = None) -> None:
    """Validate the settings every trainer config shares (those given): C > 0, a pass limit >= 0,
    a tolerance >= 0 and a positive time limit (or None); raise SettingsError naming the bad one."""
    if C is not None and not C > 0:
        raise SettingsError(f"C must be positive, not {C}")
    if max_passes is not None and max_passes < 0:
        raise SettingsError(f"the pass limit must be >= 0, not {max_passes}")
    if tol is not None and not tol >= 0:
        raise SettingsError(f"the tolerance must be >= 0, not {tol}")
    if max_seconds is not None and not max_seconds > 0:
        raise SettingsError(f"the time limit must be positive, not {max_seconds}")


def check_order(order: str) -> None:
    """Raise SettingsError unless ``order`` is one of :data:`ORDERS`."""
    if order not in ORDERS:
        raise SettingsError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")


@dataclass(frozen=True)
class EGConfig:
    """Settings of the EG trainers.

    ``theta_init`` = k starts every example at theta_i = -k e_i (the gold
    structure favoured by k per wrong part; 0 is the uniform start); None
    means ``LL_TILT`` for the log-linear dual and ``MM_TILT`` for the
    max-margin dual.

    ``compact`` keeps each example's theta_i in float32 and no marginals: they are recomputed from
    theta_i when a visit or a record needs them (one more oracle call per visit), a quarter of the
    per-part state (see :class:`egnlp.training.eg.EGRun`).
    """

    C: float = 20.0
    max_passes: int = 60
    tol: float = 1e-3
    seed: int = 0
    eta_init: float = 0.5
    order: str = "random"
    eta_growth: float = 1.05
    max_halvings: int = 10
    revisit_max: int = 8
    revisit_share: float = 10.0
    max_seconds: float | None = None
    anneal: bool = True
    theta_init: float | None = None
    compact: bool = False

    def C_at(self, passes: int) -> float:
        """The C used in pass ``passes`` (1-based).

        Without annealing, ``C``.  With it (Collins et al. 2008, Sec. 7.1.1):
        10 C for the first 5 passes, then C + 9 C * 0.7^(t - 5), snapped to C
        once within 1e-4 of it; small C converges much faster this way.
        """
        if not self.anneal:
            return self.C
        if passes <= 5:
            return 10.0 * self.C
        extra = 9.0 * 0.7 ** (passes - 5)
        return self.C if extra < 1e-4 else self.C * (1.0 + extra)

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if not 0 < self.eta_init:
            raise SettingsError(f"the initial learning rate must be positive, not {self.eta_init}")
        if self.revisit_max < 0 or not self.revisit_share > 0:
            raise SettingsError("revisit_max must be >= 0 and revisit_share positive")
        if not self.eta_growth >= 1.0:
            raise SettingsError(f"eta_growth must be >= 1, not {self.eta_growth}")
        check_order(self.order)


@dataclass(frozen=True)
class BCFWConfig:
    """Settings of block-coordinate Frank-Wolfe; stops at a relative duality gap of ``tol``.

    ``order``: "random" (a fresh permutation per pass), "cyclic" or "gap" (n visits drawn in proportion
    to each block's duality gap at the last record, :func:`egnlp.training.eg.gap_order`).
    ``average``: record and return the weighted average of the iterates (see :func:`fit_bcfw`).
    ``evaluate``: record the primal objective and duality gap (a second loss-augmented argmax per visit of
    the pass after the point, or a pass of their own for the start and the last point); False: the records'
    primal and gap are NaN, ``tol`` never stops the run, and the weights are the same (a cascade's pruner,
    whose objectives nobody reads).  ``gap_every``: which points they are computed at: the start and every
    ``gap_every``-th pass, and the last point in any case; 0: the last point only.  The other records'
    primal and gap are NaN, and the weights are the same for any value.
    Computing the true gap only every few passes is the BCFW authors' own practice (their code's
    ``gap_check``, every 10 passes by default); on es, ``--parts grandparents``, computing it after every pass
    took a quarter of the training CPU (204 CPU s in all, 157 without it).
    """

    C: float = 20.0
    max_passes: int = 60
    tol: float = 1e-3
    seed: int = 0
    order: str = "random"
    max_seconds: float | None = None
    average: bool = False
    evaluate: bool = True
    gap_every: int = 1

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        check_order(self.order)
        if isinstance(self.gap_every, bool) or not isinstance(self.gap_every, int) or self.gap_every < 0:
            raise SettingsError(f"gap_every must be an integer >= 0, not {self.gap_every!r}")
        if self.order == "gap" and not (self.evaluate and self.gap_every == 1):
            raise SettingsError("order gap draws by the duality gaps of every pass: it needs evaluate and "
                                "gap_every 1")


@dataclass(frozen=True)
class CuttingPlaneConfig:
    """Settings of the one-slack cutting-plane method.

    ``max_passes`` bounds the outer iterations (one loss-augmented pass over
    the data each); ``tol`` is the relative duality gap to stop at; a cut not
    used by the QP solution for ``forget_after`` iterations is dropped.
    """

    C: float = 20.0
    max_passes: int = 200
    tol: float = 1e-3
    qp_tol: float = 1e-10
    forget_after: int = 50
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if not self.qp_tol > 0 or self.forget_after < 1:
            raise SettingsError("qp_tol must be positive and forget_after >= 1")


@dataclass(frozen=True)
class LBFGSConfig:
    """Settings of L-BFGS on a smooth primal (the log-linear objective of a structured problem or of maxent).

    ``max_passes`` bounds the L-BFGS iterations; ``tol`` is scipy's
    ``ftol``, the relative decrease of the objective between iterations
    ``(f_k - f_k+1) / max(|f_k|, |f_k+1|, 1)`` at which it stops; ``gtol``
    stops it when the largest absolute gradient entry is at most that
    (0: never); ``memory`` is the number of correction pairs kept.
    """

    C: float = 20.0
    max_passes: int = 500
    tol: float = 1e-10
    gtol: float = 0.0
    memory: int = 10
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if not self.gtol >= 0 or self.memory < 1:
            raise SettingsError("gtol must be >= 0 and memory >= 1")


@dataclass(frozen=True)
class SGDConfig:
    """Settings of SGD on the log-linear primal.

    The rate is eta_t = eta0 / (1 + t / n) after t updates (LeCun et al.
    1998, as in Collins et al. 2008, Sec. 7.1.3).  ``eta0=None`` picks it
    from ``eta0_grid`` by one pass each from the start point, keeping the
    best dev score (or the lowest primal without dev data).  ``average``
    returns the running mean of the iterates from the second pass on
    (Polyak-Ruppert averaging; the first pass is far from the optimum).
    """

    C: float = 20.0
    max_passes: int = 60
    eta0: float | None = None
    eta0_grid: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001, 0.0001)
    average: bool = False
    seed: int = 0
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, max_seconds=self.max_seconds)
        if self.eta0 is not None and not self.eta0 > 0:
            raise SettingsError(f"eta0 must be positive, not {self.eta0}")
        if not self.eta0_grid or min(self.eta0_grid) <= 0:
            raise SettingsError("eta0_grid must hold positive rates")


@dataclass(frozen=True)
class EGRConfig:
    """Settings of excessive gap reduction.

    ``max_passes`` bounds the iterations k of Algorithm 1; ``tol`` is the
    relative duality gap to stop at; ``step`` is "adaptive" (departure 5 of
    the module docstring: the default, since the bound from the data leaves
    mu_k too large to move the gap on real data) or "paper" (mu_1 = L / sigma
    from the data, tau_k = 2 / (k + 3)).
    """

    C: float = 20.0
    max_passes: int = 300
    tol: float = 1e-3
    max_seconds: float | None = None
    step: str = "adaptive"

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if self.step not in STEPS:
            raise SettingsError(f"step must be one of {', '.join(STEPS)}, not {self.step!r}")


@dataclass(frozen=True)
class MaxentConfig:
    """Settings every maxent trainer that works in passes has (CD, SCGIS, GIS).

    ``C`` = 1 / sigma^2 (0.1: sigma^2 = 10 of Sec. 5.1).  A run stops after
    ``max_passes`` passes, once the relative objective decrease of a pass
    ``(f_prev - f) / max(|f|, 1)`` is <= ``tol``, once ``||grad f|| <=
    gtol``, or after ``max_seconds`` of optimisation time.
    """

    C: float = 0.1
    max_passes: int = 100
    tol: float = 1e-5
    gtol: float = 0.0
    max_seconds: float | None = None
    grad_norm: bool = True  # record ||grad f|| every pass (without a gtol, only the records read it)

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if not self.gtol >= 0:
            raise SettingsError(f"gtol must be >= 0, not {self.gtol}")


@dataclass(frozen=True)
class CDConfig(MaxentConfig):
    """Settings of coordinate descent (and those of :class:`MaxentConfig`).

    ``beta``, ``gamma``, ``max_line_search``: the line search (beta = 0.5,
    gamma = 0.001 in Sec. 5.1).  ``seed``: None visits features in file
    order, an int permutes them every pass.  ``record_steps`` > 0 keeps the
    first that many accepted steps in the result's ``state`` (``steps_t``,
    ``steps_z``, ``steps_grad``, ``steps_by_bound``: feature, z, A'(0), and
    whether the bound (38) accepted it) so that they can be replayed against
    the exact objective.
    """

    seed: int | None = None
    beta: float = 0.5
    gamma: float = 0.001
    max_line_search: int = 30
    record_steps: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (0 < self.beta < 1 and 0 < self.gamma < 0.5):
            raise SettingsError(f"need 0 < beta < 1 and 0 < gamma < 1/2, not {self.beta}, {self.gamma}")
        if self.max_line_search < 1 or self.record_steps < 0:
            raise SettingsError("max_line_search must be >= 1 and record_steps >= 0")


@dataclass(frozen=True)
class GISConfig(MaxentConfig):
    """Settings of GIS (and those of :class:`MaxentConfig`): ``newton_tol`` and ``newton_iters`` of the
    one-variable solves (|A'| <= 1e-5 in Sec. 5.1)."""

    newton_tol: float = 1e-5
    newton_iters: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.newton_iters < 1 or not self.newton_tol > 0:
            raise SettingsError("newton_iters must be >= 1 and newton_tol positive")


@dataclass(frozen=True)
class SCGISConfig(GISConfig):
    """Settings of SCGIS: those of :class:`GISConfig`, and ``seed`` (None: features in file order;
    an int: a fresh permutation every pass)."""

    seed: int | None = None

