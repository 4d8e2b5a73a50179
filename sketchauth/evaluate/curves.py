"""ROC and EPC curves of a score-based comparator, beside the DET of :mod:`sketchauth.evaluate.rates`.

* :func:`roc_from_scores` — the receiver operating characteristic: at every threshold of
  :func:`~sketchauth.evaluate.rates.det_from_scores`, ``(FMR, 1 − FNMR)`` (the share of genuine
  trials accepted, bob.measure's "true positive rate"). The same operating points as the DET
  curve, drawn on linear axes.
* :func:`epc` — the expected performance curve (Bengio, Mariéthoz and Keller, "The expected
  performance curve", ICML 2005 workshop; bob.measure's ``epc``): for each weight ``α ∈ [0, 1]``
  the threshold minimising the weighted error ``α·FMR + (1 − α)·FNMR`` on a *development* set,
  and the half total error rate ``HTER = (FMR + FNMR)/2`` that threshold gives on a separate
  *evaluation* set. Unlike an EER read off one set, it shows the error a deployment would see
  with a threshold chosen beforehand.
* :func:`identity_halves` — a development/evaluation split when the data has none: identities
  in two seeded halves, every trial kept in the half holding both its enrolled and its probe
  identity (cross-half impostor trials are dropped, so no person is in both sets).

Scores are distances by default (lower = more genuine: accept iff ``score ≤ τ``); with
``higher_is_genuine=True`` similarities (accept iff ``score ≥ τ``). Rates come from integer counts.

Example::

    >>> fmr, tpr, thr = roc_from_scores([0.1, 0.2, 0.6], [0.5, 0.7, 0.9])
    >>> [round(float(x), 3) for x in tpr]
    [0.0, 0.333, 0.667, 0.667, 1.0, 1.0, 1.0]
    >>> alphas, hter, _ = epc([0.1, 0.2], [0.5, 0.7], [0.15, 0.6], [0.3, 0.9], alphas=[0.5])
    >>> float(hter[0])  # threshold 0.2 from the development set: evaluation FNMR 1/2, FMR 0
    0.25
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import det_from_scores

__all__ = ["DEFAULT_EPC_POINTS", "epc", "identity_halves", "roc_from_scores"]

#: Weights ``α`` of an EPC when none are given: 0, 0.05, …, 1.
DEFAULT_EPC_POINTS = 21


def roc_from_scores(
    genuine_scores: Any, impostor_scores: Any, *, higher_is_genuine: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fmr, 1 − fnmr, thresholds)`` at every distinct threshold (ordered as the DET arrays)."""
    fmr, fnmr, thresholds = det_from_scores(genuine_scores, impostor_scores, higher_is_genuine=higher_is_genuine)
    return fmr, 1.0 - fnmr, thresholds


def _weights(alphas: Any) -> np.ndarray:
    a = np.linspace(0.0, 1.0, DEFAULT_EPC_POINTS) if alphas is None else np.asarray(alphas, dtype=float).ravel()
    if a.size == 0 or not np.all((a >= 0.0) & (a <= 1.0)):
        raise ParameterError("EPC weights alpha must be a non-empty list of numbers in [0, 1]")
    return a


def _accepted_counts(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of ``scores`` (sorted, lower = genuine) are ``≤`` each threshold."""
    return np.searchsorted(scores, thresholds, side="right")


def epc(
    dev_genuine: Any,
    dev_impostor: Any,
    eval_genuine: Any,
    eval_impostor: Any,
    *,
    alphas: Any = None,
    higher_is_genuine: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(alphas, hter, thresholds)``: the expected performance curve (definition in the module docstring).

    Per ``α``, the development threshold is the first (strictest) of
    :func:`~sketchauth.evaluate.rates.det_from_scores`' thresholds with the least
    ``α·FMR + (1 − α)·FNMR``; the HTER is measured on the evaluation scores at that threshold.
    ``alphas`` defaults to :data:`DEFAULT_EPC_POINTS` even steps over ``[0, 1]``.
    """
    a = _weights(alphas)
    fmr, fnmr, thresholds = det_from_scores(dev_genuine, dev_impostor, higher_is_genuine=higher_is_genuine)
    cost = a[:, None] * fmr[None, :] + (1.0 - a[:, None]) * fnmr[None, :]
    chosen = thresholds[np.argmin(cost, axis=1)]
    sign = -1.0 if higher_is_genuine else 1.0  # as distances: accept iff sign·score ≤ sign·τ
    gen = np.sort(sign * np.asarray(eval_genuine, dtype=float).ravel())
    imp = np.sort(sign * np.asarray(eval_impostor, dtype=float).ravel())
    if gen.size == 0 or imp.size == 0:
        raise ParameterError("the evaluation set needs genuine and impostor scores")
    tau = sign * chosen
    eval_fnmr = (gen.size - _accepted_counts(gen, tau)) / gen.size
    eval_fmr = _accepted_counts(imp, tau) / imp.size
    return a, (eval_fmr + eval_fnmr) / 2.0, chosen


def identity_halves(claimed: Any, real: Any, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks ``(development, evaluation)`` over trials from their identities (module docstring).

    ``claimed[j]`` is trial ``j``'s enrolled identity, ``real[j]`` its probe's. The distinct
    identities are permuted (seeded) and the first half is the development population.

    >>> dev, ev = identity_halves([0, 0, 1, 1, 2, 3], [0, 1, 1, 2, 2, 3], seed=0)
    >>> bool((dev & ev).any())
    False
    """
    c, r = np.asarray(claimed).ravel(), np.asarray(real).ravel()
    if c.shape != r.shape:
        raise ParameterError("claimed and real identities must have one entry per trial")
    people = np.unique(np.concatenate([c, r]))
    if people.size < 2:
        raise ParameterError("a development/evaluation split needs at least two identities")
    order = np.random.default_rng(seed).permutation(people.size)
    first = np.isin(c, people[order[: people.size // 2]])
    first_real = np.isin(r, people[order[: people.size // 2]])
    return first & first_real, ~first & ~first_real
