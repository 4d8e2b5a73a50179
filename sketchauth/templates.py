"""Enrolment from several samples: a template plus identity-dependent auxiliary data (Fang's thesis, ch. 6).

Real systems capture a person several times at enrolment and keep, besides the template, how
consistent each feature or element was: a per-feature tolerance ``v`` (interval sketches) or a
per-element weight (weighted vaults). That auxiliary data is *identity-dependent*: it is a
stable trait of the person (some of us have steadier features than others), so storing it in
clear lets anyone link two enrolments of one person across databases (Fang's thesis §6.2, the s1
linkage test). It must therefore be treated as part of the secret — sketched together with the
template by :class:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch` (scheme ``"s2"`` or ``"s3"``)
or the weighted fuzzy vault (Fang's thesis §6.3) — and counted in the entropy loss.

The rules below are our design choice (Fang's thesis, ch. 6 leaves it open); each is a formula with
explicit parameters:

* :func:`enrol_interval` — ``b_j = round(mean_i x_ij)`` (halves up) and
  ``v_j = clip(⌈scale·s_j⌉ + margin, 1, q)`` with ``s_j`` the per-feature range or standard
  deviation of the quantised samples;
* :func:`enrol_weighted_set` — ``w(x) = round((q − 1)·c(x)/k)`` (halves up) for the elements that
  appear in ``c(x) ≥ min_count`` of the ``k`` sets, so weights lie in ``[0, q)`` as the weighted
  vault expects (Fang's thesis §6.3).

The single-template rules of the evaluation (``enrol_fn(sketch, samples, setting)``, see
:mod:`sketchauth.evaluate.error_rates`) live here too:

* :func:`enrol_rounded_mean` — the interval family: the mean of the samples (rounded, or left to
  the sketch's quantiser);
* :func:`enrol_byte_mode` — code-offset: per position the most frequent byte;
* :func:`enrol_majority_set` — the set schemes: the elements present in more than half of the
  samples; :func:`fit_set_size` makes such a set exactly ``m`` elements for the complete vault
  (:func:`enrol_fuzzy_vault`).

The schemes that enrol from several captures do so through their descriptor's template hook, in
the evaluation as in the service: :func:`weighted_vault_template` (:func:`enrol_weighted_set` with
the vault's parameters) and :func:`asymmetric_template` (the asymmetric sketch's own rule; an
evaluation sweeping the enrolment margin passes it as the hook's ``margin`` option).

Nothing here keeps or logs the samples; errors name positions, never values.

Example::

    >>> b, v = enrol_interval([[10, 50], [12, 50], [11, 53]], n=100, q=8)
    >>> b.tolist(), v.tolist()
    ([11, 51], [3, 4])
    >>> elements, weights = enrol_weighted_set([{1, 2, 3}, {1, 2}, {1, 4}], q=4, p=10)
    >>> elements.tolist(), weights.tolist()
    ([1, 2], [3, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.interval_template import CEIL_SLACK, MAX_SAMPLES, SPREADS, enrol_interval
from sketchauth.sketches.params import check_int
from sketchauth.sketches.samples import as_element_set

if TYPE_CHECKING:
    from sketchauth.sketches.base import SecureSketch

__all__ = [
    "CEIL_SLACK",
    "MAX_SAMPLES",
    "SPREADS",
    "asymmetric_template",
    "enrol_byte_mode",
    "enrol_fuzzy_vault",
    "enrol_interval",
    "enrol_majority_set",
    "enrol_rounded_mean",
    "enrol_weighted_set",
    "fit_set_size",
    "fit_weights",
    "weighted_vault_template",
]

#: Largest element universe for set enrolment (elements are int64).
_MAX_UNIVERSE = 2**53


def enrol_weighted_set(
    sample_sets: Sequence[Any],
    q: int,
    *,
    p: int | None = None,
    min_count: int | None = None,
    total: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Template elements and weights from ``k ≥ 2`` captured sets (for Fang's thesis §6.3).

    Each set holds distinct integers of ``[0, p)`` (``p`` the element universe; without it any
    non-negative integer below 2^53). With ``c(x)`` the number of sets containing ``x``:

    * ``x`` is enrolled iff ``c(x) ≥ min_count`` (default ``⌈k/2⌉``: a majority of captures) and
      its weight is at least 1;
    * its weight is ``w(x) = ⌊(2(q − 1)·c(x) + k) / (2k)⌋``, i.e. ``round((q − 1)·c(x)/k)``
      half up: ``q − 1`` for an element seen every time, proportionally less for the others.

    So weights lie in ``[1, q − 1] ⊂ [0, q)``, the range the weighted fuzzy vault takes (an
    element of weight ``w`` owns ``w`` genuine slots there). Elements of weight 0 are dropped: they
    would carry no genuine vault point. Returns ``(elements, weights)`` as int64 arrays, elements
    sorted ascending. With ``total`` (a weighted vault's fixed ``g``) the weights are then adjusted
    by :func:`fit_weights` to sum to exactly ``total``.
    """
    q = check_int("q", q, 2)
    universe = _MAX_UNIVERSE if p is None else check_int("p", p, 2, _MAX_UNIVERSE)
    if isinstance(sample_sets, (str, bytes)) or not isinstance(sample_sets, Sequence):
        raise SampleError("sample_sets must be a sequence of sets")
    k = len(sample_sets)
    if k < 2:
        raise SampleError(f"enrolment needs at least 2 captured sets, got {k}")
    if k > MAX_SAMPLES:
        raise SampleError(f"at most {MAX_SAMPLES} captured sets per enrolment, got {k}")
    min_count = -(-k // 2) if min_count is None else check_int("min_count", min_count, 1, k)
    sets = [
        as_element_set(list(s) if isinstance(s, (set, frozenset)) else s, 0, universe, name=f"set {i}")
        for i, s in enumerate(sample_sets)
    ]
    elements, counts = np.unique(np.concatenate(sets), return_counts=True)
    weights = (2 * (q - 1) * counts + k) // (2 * k)
    keep = (counts >= min_count) & (weights >= 1)
    elements, weights = elements[keep].astype(np.int64), weights[keep].astype(np.int64)
    return (elements, weights) if total is None else fit_weights(elements, weights, total, q)


def fit_weights(elements: np.ndarray, weights: np.ndarray, total: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights adjusted to sum to exactly ``total`` (the weighted vault's fixed ``g``).

    The weighted vault fixes the total weight so that the polynomial degree cannot link two
    enrolments; a person's consistency rarely sums to it by itself. The rule: elements are taken
    heaviest first (ties: smaller element first). When the weights fall short, the heaviest
    elements are raised towards ``q − 1`` in that order (they are the ones most likely to be
    present at verification); when they exceed ``total``, the last elements taken (the least
    consistent) lose weight until the sum is ``total``, and elements left at 0 are dropped.
    ``SampleError`` if even ``q − 1`` on every element cannot reach ``total``.
    Returns ``(elements, weights)`` with the elements sorted ascending.
    """
    total = check_int("total", total, 1)
    q = check_int("q", q, 2)
    order = np.lexsort((elements, -weights))
    e, w = np.asarray(elements, dtype=np.int64)[order], np.asarray(weights, dtype=np.int64)[order].copy()
    if int(w.sum()) < total:
        room = (q - 1) - w
        need = total - int(w.sum())
        # Each element takes what is still needed after the heavier ones took theirs.
        w = w + np.minimum(room, np.maximum(0, need - np.concatenate([[0], np.cumsum(room)[:-1]])))
        if int(w.sum()) < total:
            raise SampleError(f"too few consistent elements to reach total weight g={total}")
    before = np.concatenate([[0], np.cumsum(w)[:-1]])
    w = np.clip(total - before, 0, w)
    keep = w > 0
    order = np.argsort(e[keep], kind="stable")
    return e[keep][order], w[keep][order]


# -- single templates of the evaluation: enrol_fn(sketch, samples, setting) -----------------------------
def enrol_rounded_mean(sketch: SecureSketch[Any, Any] | None, samples: Any, setting: Any = None) -> np.ndarray:
    """Template of the interval family: the mean of the enrolment samples — never clipped.

    For a sketch that quantises (a ``step`` or an ``offset``) the real mean is returned and the
    sketch quantises it like any real secret (``⌊(x − offset)/step + 1/2⌋``,
    :class:`~sketchauth.sketches.samples.Quantiser`), refusing a mean outside its range with
    :class:`SampleError`; otherwise the mean rounded to the nearest integer (halves up), which the
    sketch checks against ``[0, n)``. A template the sketch cannot take stops the evaluation with
    that error (:func:`~sketchauth.evaluate.trials.enrol_population`) instead of being moved into range.
    """
    mean = np.asarray(samples, dtype=float).mean(axis=0)
    quantiser = getattr(sketch, "quantiser", None)
    if quantiser is not None and quantiser.measuring:
        return cast("np.ndarray", mean)
    return cast("np.ndarray", np.floor(mean + 0.5))


def enrol_byte_mode(sketch: SecureSketch[Any, Any] | None, samples: Any, setting: Any = None) -> bytes:
    """Template of code-offset: per position the most frequent byte (the smallest on ties)."""
    arr = np.asarray(samples, dtype=np.int64)
    if arr.ndim != 2 or arr.size == 0 or arr.min() < 0 or arr.max() > 255:
        raise SampleError("byte-string samples must be rows of values in [0, 255]")
    counts = np.zeros((256, arr.shape[1]), dtype=np.int64)
    np.add.at(counts, (arr, np.broadcast_to(np.arange(arr.shape[1]), arr.shape)), 1)
    return cast("bytes", counts.argmax(axis=0).astype(np.uint8).tobytes())


def enrol_majority_set(sketch: SecureSketch[Any, Any] | None, samples: Any, setting: Any = None) -> np.ndarray:
    """Template of the set schemes: the elements present in more than half of the samples."""
    sets = list(samples)
    values, counts = np.unique(np.concatenate([np.asarray(s, dtype=np.int64) for s in sets]), return_counts=True)
    return values[2 * counts > len(sets)]


def fit_set_size(elements: Any, size: int, universe: int) -> np.ndarray:
    """A set of exactly ``size`` elements of ``[0, universe)`` made from ``elements``.

    The complete fuzzy vault decodes only ``m``-element samples, and captured sets vary in size.
    Our evaluation rule is data-independent: a larger set keeps its ``size`` smallest elements,
    a smaller one is padded with the smallest elements of the universe it lacks (which are
    almost never genuine, so padding cannot help an impostor more than a genuine user).
    """
    arr = np.unique(np.asarray(elements, dtype=np.int64))
    if arr.size >= size:
        return arr[:size]
    absent = np.setdiff1d(np.arange(min(universe, size + arr.size + 1), dtype=np.int64), arr)
    return np.sort(np.concatenate([arr, absent[: size - arr.size]]))


def enrol_fuzzy_vault(sketch: SecureSketch[Any, Any], samples: Any, setting: Any = None) -> np.ndarray:
    """Template of the complete fuzzy vault: the majority set made exactly ``m`` elements of ``[0, p)``."""
    params = sketch.params()
    return fit_set_size(enrol_majority_set(sketch, samples), int(params["m"]), int(params["p"]))


# -- the schemes' template hooks (``SchemeDescriptor.template``) ---------------------------------------
def asymmetric_template(
    sketch: SecureSketch[Any, Any], captures: Sequence[Any], **options: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(b, v)`` for an asymmetric interval sketch from several captures.

    The sketch's own :meth:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch.template`:
    :func:`enrol_interval` with its universe ``n``, cap ``q`` and quantisation (``step``,
    ``offset``); ``options`` are :func:`enrol_interval`'s (``spread``, ``margin``, ``scale``).
    """
    # cycle: sketchauth.templates <-> sketchauth.sketches.asymmetric (the sketch's template() uses enrol_interval)
    from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch

    if not isinstance(sketch, AsymmetricIntervalSketch):
        raise ParameterError(f"asymmetric_template needs an asymmetric interval sketch, not {sketch.scheme_name}")
    return sketch.template(captures, **options)


def weighted_vault_template(
    sketch: SecureSketch[Any, Any], captures: Sequence[Any], **options: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(elements, weights)`` for a weighted fuzzy vault from several captured sets.

    :func:`enrol_weighted_set` weighs each element by how consistently the captures contain it
    and fits the weights to the vault's fixed total weight ``g`` (fixed so that it cannot link two
    enrolments) with the one rule, :func:`fit_weights`; ``options``: ``min_count``.
    """
    params = sketch.params()
    return enrol_weighted_set(captures, params["q"], p=params["p"], total=params["g"], **options)
