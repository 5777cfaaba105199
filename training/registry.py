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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from egnlp.training.coordinate_descent import CDConfig, fit_cd
from egnlp.training.eg import EGConfig, fit_eg_ll, fit_eg_ll_batch, fit_eg_mm, fit_eg_mm_batch
from egnlp.training.egr import EGRConfig, fit_egr
from egnlp.training.iterative_scaling import GISConfig, SCGISConfig, fit_gis, fit_scgis
from egnlp.training.max_margin import BCFWConfig, CuttingPlaneConfig, fit_bcfw, fit_cutting_plane
from egnlp.training.primal import LBFGSConfig, SGDConfig, fit_lbfgs, fit_maxent_lbfgs, fit_sgd

STRUCTURED = "structured"
MAXENT = "maxent"
PROBLEM_KINDS = (STRUCTURED, MAXENT)


@dataclass(frozen=True)
class Trainer:
    name: str
    description: str
    config: type  # a frozen dataclass of settings
    fit: Callable[..., Any]  # fit(problem, *, config, dev=None, callbacks=(), state=None) -> TrainResult
    objective: str  # "ll" (log-linear) or "mm" (max-margin)
    has_dual: bool  # records carry a dual value and a duality gap
    problem: str = STRUCTURED  # the kind of problem it trains


TRAINERS: tuple[Trainer, ...] = (
    Trainer("eg-ll", "online exponentiated gradient on the log-linear (CRF) dual "
            "(Collins et al. 2008, Fig. 3, adaptive rate of Sec. 7)", EGConfig, fit_eg_ll, "ll", True),
    Trainer("eg-ll-batch", "batch exponentiated gradient on the log-linear dual (Collins et al. 2008, Fig. 1)",
            EGConfig, fit_eg_ll_batch, "ll", True),
    Trainer("eg-mm", "online exponentiated gradient on the max-margin (M3N) dual "
            "(Bartlett et al. 2004; Collins et al. 2008, Sec. 8)", EGConfig, fit_eg_mm, "mm", True),
    Trainer("eg-mm-batch", "batch exponentiated gradient on the max-margin dual", EGConfig, fit_eg_mm_batch,
            "mm", True),
    Trainer("lbfgs", "L-BFGS (scipy) on the log-linear primal (Collins et al. 2008, Sec. 7.1.4)",
            LBFGSConfig, fit_lbfgs, "ll", False),
    Trainer("sgd", "stochastic gradient descent on the log-linear primal, eta0 / (1 + t/n) "
            "(Collins et al. 2008, Sec. 7.1.3)", SGDConfig, fit_sgd, "ll", False),
    Trainer("cutting-plane", "one-slack cutting-plane method of SVM-Struct on the max-margin objective",
            CuttingPlaneConfig, fit_cutting_plane, "mm", True),
    Trainer("bcfw", "block-coordinate Frank-Wolfe on the max-margin dual (Lacoste-Julien et al. 2013)",
            BCFWConfig, fit_bcfw, "mm", True),
    Trainer("egr", "excessive gap reduction with Bregman (KL) projections on the max-margin objective "
            "(Zhang, Saha and Vishwanathan 2011, Algorithms 1-2)", EGRConfig, fit_egr, "mm", True),
    Trainer("cd", "coordinate descent with one Newton step and line search "
            "(Huang et al. 2010, Algorithm 3, Sec. 3.2.1)", CDConfig, fit_cd, "ll", False, MAXENT),
    Trainer("gis", "generalized iterative scaling with a Gaussian prior (Huang et al. 2010, Table 1)",
            GISConfig, fit_gis, "ll", False, MAXENT),
    Trainer("scgis", "sequential conditional GIS with a Gaussian prior (Goodman 2002; Huang et al. 2010, "
            "Table 1)", SCGISConfig, fit_scgis, "ll", False, MAXENT),
    Trainer("lbfgs", "L-BFGS (scipy L-BFGS-B) on the maxent objective (Huang et al. 2010, Sec. 5.1)",
            LBFGSConfig, fit_maxent_lbfgs, "ll", False, MAXENT),
)


def trainer_names(problem: str = STRUCTURED) -> list[str]:
    """The names of the trainers of one problem kind, in registry order."""
    return [t.name for t in TRAINERS if t.problem == problem]


def get_trainer(name: str, problem: str = STRUCTURED) -> Trainer:
    """The trainer ``name`` of problem kind ``problem``; ValueError naming the choices otherwise."""
    if problem not in PROBLEM_KINDS:
        raise ValueError(f"unknown problem kind '{problem}'; kinds: {', '.join(PROBLEM_KINDS)}")
    for trainer in TRAINERS:
        if trainer.name == name and trainer.problem == problem:
            return trainer
    other = [t.problem for t in TRAINERS if t.name == name]
    hint = f" ('{name}' trains {other[0]} problems)" if other else ""
    raise ValueError(f"unknown trainer '{name}'{hint}; trainers: {', '.join(trainer_names(problem))}")


# Names users bring from the command line (``--passes``) or other tools for a config field.
SETTING_ALIASES = {"passes": "max_passes", "iterations": "max_passes", "max_iter": "max_passes",
                   "epochs": "max_passes", "seconds": "max_seconds", "time_limit": "max_seconds"}
# The values a config field of each annotated type takes (bool is no number here).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {"float": (numbers.Real,), "int": (numbers.Integral,),
                                             "bool": (bool, np.bool_), "str": (str,), "None": (type(None),)}
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
        ValueError: a name the config does not have (listing the valid ones,
            with a suggestion for CLI spellings such as ``passes``), or a value
            of the wrong type (``C="x"``); the config itself checks ranges.
    """
    fields = {f.name: f for f in dataclasses.fields(trainer.config)}
    valid = ", ".join(sorted(fields))
    for name in settings:
        if not isinstance(name, str) or name not in fields:
            name = str(name)
            raise ValueError(f"trainer '{trainer.name}' has no setting {name}{_suggestion(name, set(fields))}; "
                             f"valid settings: {valid}")
    for name, value in settings.items():
        annotation = fields[name].type
        kinds = [k.strip() for k in annotation.split("|")] if isinstance(annotation, str) else []
        if not kinds or any(k not in _FIELD_TYPES for k in kinds):
            continue  # a type this check does not know: the config checks it
        allowed = tuple(t for k in kinds for t in _FIELD_TYPES[k])
        is_bool = isinstance(value, (bool, np.bool_))
        if not isinstance(value, allowed) or (is_bool and "bool" not in kinds):
            want = " or ".join(_TYPE_NAMES[k] for k in kinds)
            raise ValueError(f"setting {name} of trainer '{trainer.name}' must be {want}, "
                             f"not {repr(value)[:40]} ({type(value).__name__})")


def make_config(trainer: Trainer, **settings):
    """The trainer's config from ``settings``; a setting it does not have, or a value of the wrong type,
    is an error naming the valid settings (:func:`check_settings`), not ignored."""
    check_settings(trainer, settings)
    return trainer.config(**settings)
