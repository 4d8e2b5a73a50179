"""How each registered scheme is evaluated: data kind, swept parameter, enrolment rule, decider.

An :class:`SchemeAdapter` binds a scheme name to what :func:`sketchauth.evaluate.error_rates.evaluate_scheme`
needs: the template rule of :mod:`sketchauth.templates` (``enrol_fn(sketch, samples, setting)``),
the exact decider of :mod:`sketchauth.evaluate.deciders` (or the scheme's real batch decoder), the
parameter a sweep varies, the unprotected baselines to report beside it
(:mod:`sketchauth.evaluate.baselines`) and how a raw sample becomes what ``decode`` takes.
:func:`fit_quantiser_params` fits the interval family's range to the enrolment samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors, rows_by_identity
from sketchauth.evaluate.deciders import DecideFn, decide_batch, decide_exact, decide_interval
from sketchauth.evaluate.trials import Data, EnrolFn
from sketchauth.sketches.base import SecureSketch, scheme_class
from sketchauth.sketches.params import check_int, check_positive_float
from sketchauth.sketches.samples import Quantiser
from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS
from sketchauth.templates import (
    enrol_asymmetric_margin,
    enrol_byte_mode,
    enrol_fuzzy_vault,
    enrol_majority_set,
    enrol_rounded_mean,
    enrol_weighted_vault,
    fit_set_size,
)

__all__ = ["ADAPTERS", "QUANTISED_SCHEMES", "ProbeFn", "SchemeAdapter", "adapter", "fit_quantiser_params"]

#: ``probe_fn(sample) -> probe``: one raw sample to what ``decode`` takes.
ProbeFn = Callable[[Any], Any]


# -- probe conversions ------------------------------------------------------------------------------------
def _row_to_bytes(row: Any) -> bytes:
    arr = np.asarray(row)
    if arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
        raise SampleError("byte-string samples must be integers")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise SampleError("byte-string samples must lie in [0, 255]")
    return arr.astype(np.uint8).tobytes()


def _fuzzy_vault_probe(params: dict[str, Any]) -> ProbeFn:
    m, p = int(params["m"]), int(params["p"])
    return lambda x: fit_set_size(x, m, p)


def _weighted_vault_probe(params: dict[str, Any]) -> ProbeFn:
    most = MAX_CANDIDATE_POINTS // int(params["q"])
    return lambda x: np.asarray(x, dtype=np.int64)[:most]


@dataclass(frozen=True)
class SchemeAdapter:
    """How to evaluate one registered scheme: data kind, swept parameter, enrolment, decider.

    ``make_sketch(params, setting)`` builds the sketch with ``setting`` for ``sweep`` (unless
    ``sweep_at_enrolment``: then the setting goes to ``enrol`` only, e.g. the asymmetric
    schemes' enrolment margin); ``probe_for(params)`` returns the conversion of one raw sample
    (row of a vector array, or a set) into what ``decode`` takes.
    """

    scheme: str
    data_kind: str  # "vectors", "strings" or "sets"
    sweep: str
    enrol: EnrolFn
    decide: DecideFn
    baseline_metrics: tuple[str, ...]
    probe_for: Callable[[dict[str, Any]], ProbeFn | None] = lambda params: None
    min_enrol_samples: int = 1
    sweep_at_enrolment: bool = False

    def make_sketch(self, params: dict[str, Any], setting: Any) -> SecureSketch:
        merged = dict(params) if self.sweep_at_enrolment else {**params, self.sweep: setting}
        try:
            return scheme_class(self.scheme).from_params(merged)
        except KeyError as exc:
            raise ParameterError(f"{self.scheme} needs parameter {exc.args[0]!r} in --params") from None


ADAPTERS: dict[str, SchemeAdapter] = {
    "interval": SchemeAdapter(
        "interval", "vectors", "v", enrol_rounded_mean, decide_interval, ("euclidean", "chebyshev")
    ),
    "code-offset": SchemeAdapter(
        "code-offset",
        "strings",
        "t",
        enrol_byte_mode,
        decide_exact,
        ("hamming",),
        probe_for=lambda params: _row_to_bytes,
    ),
    "pinsketch": SchemeAdapter("pinsketch", "sets", "t", enrol_majority_set, decide_exact, ("set-difference",)),
    "fuzzy-vault": SchemeAdapter(
        "fuzzy-vault", "sets", "t", enrol_fuzzy_vault, decide_batch, ("set-difference",), probe_for=_fuzzy_vault_probe
    ),
    "weighted-vault": SchemeAdapter(
        "weighted-vault",
        "sets",
        "t",
        enrol_weighted_vault,
        decide_batch,
        ("set-difference",),
        probe_for=_weighted_vault_probe,
        min_enrol_samples=2,
    ),
    "asymmetric-interval": SchemeAdapter(
        "asymmetric-interval",
        "vectors",
        "margin",
        enrol_asymmetric_margin,
        decide_exact,
        ("euclidean", "chebyshev"),
        min_enrol_samples=2,
        sweep_at_enrolment=True,
    ),
}


def adapter(scheme: str) -> SchemeAdapter:
    """The adapter for a registered scheme (``ParameterError`` naming the known ones)."""
    try:
        return ADAPTERS[scheme]
    except KeyError:
        raise ParameterError(
            f"no evaluation adapter for scheme {scheme!r}; known: {', '.join(sorted(ADAPTERS))}"
        ) from None


#: The schemes whose quantiser :func:`fit_quantiser_params` can fit to the data.
QUANTISED_SCHEMES = ("interval", "asymmetric-interval")


def fit_quantiser_params(
    scheme: str, params: dict[str, Any], data: Data, *, enrol_samples: int = 1, settings: Sequence[Any] = ()
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``params`` with ``offset`` and ``n`` fitted to the enrolment samples, and a note saying so.

    Applies to the interval family when ``params`` has a ``step`` but neither ``n`` nor ``offset``
    (otherwise ``params`` come back unchanged, with no note). The rule: ``lo``/``hi`` are the
    smallest and largest value, over every feature, of the first ``enrol_samples`` samples of
    every identity (the rows the evaluation enrols from — probes are not looked at); the margin is
    ``m = w − 1`` levels, ``w`` the widest tolerance that can be enrolled (the largest swept ``v``
    for ``interval``, ``q`` for ``asymmetric-interval``), so a probe within the tolerance of a
    template at the edge is still inside the range; then
    ``Quantiser.covering(lo − m·step, hi + m·step, step)``: ``offset = lo − m·step`` and
    ``n = ⌊(hi − lo)/step + 2m + 1/2⌋ + 1`` levels. Signed features are mapped, never clipped:
    probes that still fall outside are counted as malformed (and the report says how many).
    """
    if scheme not in QUANTISED_SCHEMES or params.get("step") is None or "n" in params or "offset" in params:
        return dict(params), ()
    if not isinstance(data, LabelledVectors):
        raise ParameterError(f"{scheme} evaluates vectors, got {type(data).__name__}")
    enrol_samples = check_int("enrol_samples", enrol_samples)
    rows = np.concatenate([r[:enrol_samples] for _, r in rows_by_identity(data.identities)])
    values = np.asarray(data.samples[rows], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise SampleError("an enrolment sample has a NaN or infinite value: cannot fit the quantiser's range")
    if scheme == "interval":
        widest = max((int(x) for x in settings if isinstance(x, (int, np.integer))), default=1)
    else:
        widest = int(params.get("q", 1))
    margin = max(0, widest - 1)
    step = check_positive_float("step", params["step"])
    lo, hi = float(values.min()), float(values.max())
    fitted = Quantiser.covering(lo - margin * step, max(hi + margin * step, lo - margin * step + step), step)
    out = {**params, "n": fitted.n, "offset": fitted.offset if fitted.offset is not None else 0.0}
    note = (
        f"offset and n fitted to the enrolment samples ({enrol_samples} per identity): their values span "
        f"[{lo:g}, {hi:g}]; with {margin} level(s) of margin on each side (the widest tolerance, {widest}, minus 1) "
        f"and step {step:g} the sketch takes {fitted.describe()}; probes outside it are counted as malformed"
    )
    return out, (note,)
