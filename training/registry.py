"""The one registry of trainer names, shared by the CLI and the Python API.

Every trainer has the same contract: a frozen config dataclass and
``fit(problem, *, config, dev=None, callbacks=(), state=None) -> TrainResult``
writing one :class:`~egnlp.training.records.PassRecord` per pass.  A trainer
trains one kind of problem: ``structured`` (the seam of
:mod:`egnlp.training.structured_problem`: the parser and the CRF tagger) or ``maxent``
(:class:`~egnlp.training.maxent_problem.MaxentProblem`: the maxent tagger).
A name is unique within its kind; ``lbfgs`` exists for both.
"""

from __future__ import annotations

import dataclasses
import difflib
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable

from egnlp.base.errors import SettingsError
from egnlp.training.configs import (BCFWConfig, CDConfig, CuttingPlaneConfig, EGConfig, EGRConfig, GISConfig,
                                    LBFGSConfig, SCGISConfig, SGDConfig)

STRUCTURED = "structured"
MAXENT = "maxent"
PROBLEM_KINDS = (STRUCTURED, MAXENT)


@dataclass(frozen=True)
class Trainer:
    name: str
    description: str
    config: type  # a frozen dataclass of settings (egnlp.training.configs)
    function: str  # "module:name" of fit(problem, *, config, dev=None, callbacks=(), state=None) -> TrainResult
    objective: str  # "ll" (log-linear) or "mm" (max-margin)
    has_dual: bool  # records carry a dual value and a duality gap
    problem: str = STRUCTURED  # the kind of problem it trains

    @property
    def fit(self) -> Callable[..., Any]:
        """The trainer's fit function, imported on first use (the registry itself loads no kernels)."""
        module, name = self.function.split(":")
        return getattr(import_module(f"egnlp.training.{module}"), name)


TRAINERS: tuple[Trainer, ...] = (
    Trainer("eg-ll", "online exponentiated gradient on the log-linear (CRF) dual "
            "(Collins et al. 2008, Fig. 3, adaptive rate of Sec. 7)", EGConfig, "eg:fit_eg_ll", "ll", True),
    Trainer("eg-ll-batch", "batch exponentiated gradient on the log-linear dual (Collins et al. 2008, Fig. 1)",
            EGConfig, "eg:fit_eg_ll_batch", "ll", True),
    Trainer("eg-mm", "online exponentiated gradient on the max-margin (M3N) dual "
            "(Bartlett et al. 2004; Collins et al. 2008, Sec. 8)", EGConfig, "eg:fit_eg_mm", "mm", True),
    Trainer("eg-mm-batch", "batch exponentiated gradient on the max-margin dual", EGConfig, "eg:fit_eg_mm_batch",
            "mm", True),
    Trainer("lbfgs", "L-BFGS (scipy) on the log-linear primal (Collins et al. 2008, Sec. 7.1.4)",
            LBFGSConfig, "primal:fit_lbfgs", "ll", False),
    Trainer("sgd", "stochastic gradient descent on the log-linear primal, eta0 / (1 + t/n) "
            "(Collins et al. 2008, Sec. 7.1.3)", SGDConfig, "primal:fit_sgd", "ll", False),
    Trainer("cutting-plane", "one-slack cutting-plane method of SVM-Struct on the max-margin objective",
            CuttingPlaneConfig, "max_margin:fit_cutting_plane", "mm", True),
    Trainer("bcfw", "block-coordinate Frank-Wolfe on the max-margin dual (Lacoste-Julien et al. 2013)",
            BCFWConfig, "max_margin:fit_bcfw", "mm", True),
    Trainer("egr", "excessive gap reduction with Bregman (KL) projections on the max-margin objective "
            "(Zhang, Saha and Vishwanathan 2011, Algorithms 1-2)", EGRConfig, "egr:fit_egr", "mm", True),
    Trainer("cd", "coordinate descent with one Newton step and line search "
            "(Huang et al. 2010, Algorithm 3, Sec. 3.2.1)", CDConfig, "coordinate_descent:fit_cd", "ll", False, MAXENT),
    Trainer("gis", "generalized iterative scaling with a Gaussian prior (Huang et al. 2010, Table 1)",
            GISConfig, "iterative_scaling:fit_gis", "ll", False, MAXENT),
    Trainer("scgis", "sequential conditional GIS with a Gaussian prior (Goodman 2002; Huang et al. 2010, "
            "Table 1)", SCGISConfig, "iterative_scaling:fit_scgis", "ll", False, MAXENT),
    Trainer("lbfgs", "L-BFGS (scipy L-BFGS-B) on the maxent objective (Huang et al. 2010, Sec. 5.1)",
            LBFGSConfig, "primal:fit_maxent_lbfgs", "ll", False, MAXENT),
)


def trainer_names(problem: str = STRUCTURED) -> list[str]:
    """The names of the trainers of one problem kind, in registry order."""
    return [t.name for t in TRAINERS if t.problem == problem]


def get_trainer(name: str, problem: str = STRUCTURED) -> Trainer:
    """The trainer ``name`` of problem kind ``problem``; SettingsError naming the choices otherwise."""
    if problem not in PROBLEM_KINDS:
        raise SettingsError(f"unknown problem kind '{problem}'; kinds: {', '.join(PROBLEM_KINDS)}")
    for trainer in TRAINERS:
        if trainer.name == name and trainer.problem == problem:
            return trainer
    other = [t.problem for t in TRAINERS if t.name == name]
    hint = f" ('{name}' trains {other[0]} problems)" if other else ""
    raise SettingsError(f"unknown trainer '{name}'{hint}; trainers: {', '.join(trainer_names(problem))}")


# Names users bring from the command line (``--passes``) or other tools for a config field.
SETTING_ALIASES = {"passes": "max_passes", "iterations": "max_passes", "max_iter": "max_passes",
                   "epochs": "max_passes", "seconds": "max_seconds", "time_limit": "max_seconds"}
# The values a config field of each annotated type takes (bool is no number here).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {"float": (numbers.Real,), "int": (numbers.Integral,),
                                             "bool": (bool,), "str": (str,), "None": (type(None),)}
_TYPE_NAMES = {"float": "a number", "int": "an integer", "bool": "true or false", "str": "a string",
               "None": "None"}


def _suggestion(name: str, fields: set[str]) -> str:
    """' (did you mean X?)' for a setting that is a CLI spelling, an alias or a near miss of a field, else ''."""
    plain = name.lstrip("-").replace("-", "_")
    guess = plain if plain in fields else SETTING_ALIASES.get(plain.lower())
    if guess not in fields:
        folded = {f.lower(): f for f in fields}
        guess = folded.get(plain.lower())
    if guess not in fields:
        close = difflib.get_close_matches(plain, sorted(fields), n=1, cutoff=0.7)
        guess = close[0] if close else None
    return f" (did you mean {guess}?)" if guess else ""


def check_settings(trainer: Trainer, settings: Mapping[str, Any]) -> None:
    """Check setting names and value types against the trainer's config fields.

    Raises:
        SettingsError: a name the config does not have (listing the valid ones,
            with a suggestion for CLI spellings such as ``passes``), or a value
            of the wrong type (``C="x"``); the config itself checks ranges.
    """
    fields = {f.name: f for f in dataclasses.fields(trainer.config)}
    valid = ", ".join(sorted(fields))
    for name in settings:
        if not isinstance(name, str) or name not in fields:
            name = str(name)
            raise SettingsError(f"trainer '{trainer.name}' has no setting {name}{_suggestion(name, set(fields))}; "
                                f"valid settings: {valid}")
    for name, value in settings.items():
        check_value(f"setting {name} of trainer '{trainer.name}'", value, fields[name].type)


def check_value(what: str, value: Any, annotation: Any) -> None:
    """SettingsError naming ``what`` unless ``value`` fits the field ``annotation`` (``"float | None"``, ...;
    a type this check does not know is left to the code that reads the value)."""
    kinds = [k.strip() for k in annotation.split("|")] if isinstance(annotation, str) else []
    if not kinds or any(k not in _FIELD_TYPES for k in kinds):
        return
    allowed = tuple(t for k in kinds for t in _FIELD_TYPES[k])
    is_bool = isinstance(value, bool) or type(value).__name__ == "bool_"  # NumPy's too
    fits = (is_bool and "bool" in kinds) or (isinstance(value, allowed) and not is_bool)
    if not fits:
        want = " or ".join(_TYPE_NAMES[k] for k in kinds)
        raise SettingsError(f"{what} must be {want}, not {repr(value)[:40]} ({type(value).__name__})")


def make_config(trainer: Trainer, **settings):
    """The trainer's config from ``settings``; a setting it does not have, or a value of the wrong type,
    is an error naming the valid settings (:func:`check_settings`), not ignored."""
    check_settings(trainer, settings)
    return trainer.config(**settings)


def path_configs(trainer: Trainer, Cs: Sequence[float], *, tol: float = 1e-3, **settings) -> list:
    """The configs of a warm-started path of C values (Collins et al. 2008, Sec. 7.1.2), one per C: annealing
    off (the warm start does its job) and the relative gap ``tol`` for every run, where the trainer has them."""
    fields = {f.name for f in dataclasses.fields(trainer.config)}
    if "anneal" in fields:
        settings.setdefault("anneal", False)
    if "tol" in fields:
        settings["tol"] = tol
    return [make_config(trainer, **{**settings, "C": C}) for C in Cs]
