"""How each registered scheme is evaluated: data kind, swept parameter, enrolment rule, decider.

An :class:`SchemeAdapter` binds a scheme name to what :func:`sketchauth.evaluate.error_rates.evaluate_scheme`
needs: its enrolment rule (``enrol_fn(sketch, samples, setting)``), its decider
(:mod:`sketchauth.evaluate.deciders`), the parameter a sweep varies, the unprotected baselines to
report beside it (:mod:`sketchauth.evaluate.baselines`) and how a raw sample becomes what
``decode`` takes. The adapters derive from the schemes' descriptors
(:class:`~sketchauth.sketches.base.SchemeDescriptor`): every registered family with a ``sweep``
has one, looked up when it is needed (so a family registered later is evaluated too):

* data kind and baseline metrics by the descriptor's ``sample_kind``;
* enrolment: the descriptor's ``template`` hook when it has one (the swept setting as its option
  when ``sweep_at_enrolment``), otherwise the single-template rule of the sample kind
  (:func:`~sketchauth.templates.enrol_rounded_mean`, :func:`~sketchauth.templates.enrol_byte_mode`,
  :func:`~sketchauth.templates.enrol_majority_set`);
* decision: the scheme's real batch decoder (:func:`~sketchauth.evaluate.deciders.decide_batch`)
  unless :data:`ACCELERATED_DECIDERS` has an exact array rule for it.

The few evaluation-only rules that are not the scheme's (the complete vault's fixed-size
enrolment and probes, the weighted vault's probe cap) are the ``*_OVERRIDES`` tables here.
:func:`fit_quantiser_params` fits the interval family's range to the enrolment samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors, rows_by_identity
from sketchauth.evaluate.deciders import DecideFn, decide_batch, decide_exact, decide_interval
from sketchauth.evaluate.trials import Data, EnrolFn
from sketchauth.sketches.base import SampleKind, SchemeDescriptor, SecureSketch, scheme_class
from sketchauth.sketches.params import check_int, check_positive_float
from sketchauth.sketches.registry import descriptors, scheme_descriptor
from sketchauth.sketches.samples import Quantiser
from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS
from sketchauth.templates import (
    enrol_byte_mode,
    enrol_fuzzy_vault,
    enrol_majority_set,
    enrol_rounded_mean,
    fit_set_size,
)

__all__ = [
    "ACCELERATED_DECIDERS",
    "ADAPTERS",
    "BASELINE_METRICS",
    "BASELINE_OVERRIDES",
    "DATA_KINDS",
    "ENROL_OVERRIDES",
    "PROBES",
    "PROBE_OVERRIDES",
    "SINGLE_TEMPLATES",
    "ProbeFn",
    "SchemeAdapter",
    "TemplateEnrol",
    "adapter",
    "adapter_for",
    "fit_quantiser_params",
    "quantised_schemes",
]

#: ``probe_fn(sample) -> probe``: one raw sample to what ``decode`` takes.
ProbeFn = Callable[[Any], Any]
#: ``probe_for(params) -> probe_fn`` (``None``: the raw sample is the probe).
ProbeFor = Callable[[dict[str, Any]], ProbeFn | None]


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


def _no_probe(params: dict[str, Any]) -> ProbeFn | None:
    return None


def _bytes_probe(params: dict[str, Any]) -> ProbeFn:
    return _row_to_bytes


# -- what the sample kind decides ---------------------------------------------------------------------------
#: The evaluation's data kind of each sample kind (:mod:`sketchauth.evaluate.data`).
DATA_KINDS: Mapping[SampleKind, str] = {"vector": "vectors", "bytes": "strings", "set": "sets"}
#: The unprotected comparisons reported beside a scheme, by sample kind.
BASELINE_METRICS: Mapping[SampleKind, tuple[str, ...]] = {
    "vector": ("euclidean", "chebyshev"),
    "bytes": ("hamming",),
    "set": ("set-difference",),
}
#: The single-template rule (``enrol_fn``) of a scheme without a template hook, by sample kind.
SINGLE_TEMPLATES: Mapping[SampleKind, EnrolFn] = {
    "vector": enrol_rounded_mean,
    "bytes": enrol_byte_mode,
    "set": enrol_majority_set,
}
#: How a raw sample becomes a probe, by sample kind (vectors and sets are probes as they are).
PROBES: Mapping[SampleKind, ProbeFor] = {"bytes": _bytes_probe}

# -- evaluation-only rules, by scheme ---------------------------------------------------------------------
#: Enrolment rules of the evaluation that are not the scheme's own (the complete vault takes
#: exactly ``m`` elements: the majority set is cut or padded to that size).
ENROL_OVERRIDES: Mapping[str, EnrolFn] = {"fuzzy-vault": enrol_fuzzy_vault}
#: Probe conversions of the evaluation that are not the sample kind's (vault probe sizes).
PROBE_OVERRIDES: Mapping[str, ProbeFor] = {
    "fuzzy-vault": _fuzzy_vault_probe,
    "weighted-vault": _weighted_vault_probe,
}
#: Exact array deciders that stand in for real decoding (the same run cross-checks them against
#: real decodes); every other scheme is decided by its own batch decoder.
ACCELERATED_DECIDERS: Mapping[str, DecideFn] = {
    "interval": decide_interval,
    "code-offset": decide_exact,
    "pinsketch": decide_exact,
    "asymmetric-interval": decide_exact,
    "angular": decide_exact,
    "angular-polar": decide_exact,
}
#: Unprotected comparisons of a scheme that are not its sample kind's (embeddings by angle).
BASELINE_OVERRIDES: Mapping[str, tuple[str, ...]] = {"angular": ("cosine",), "angular-polar": ("cosine",)}


@dataclass(frozen=True)
class TemplateEnrol:
    """``enrol_fn`` of a scheme with a template hook: the sketch's descriptor makes the secret.

    With ``option`` (the swept template option, ``sweep_at_enrolment``) the setting is passed to
    the hook as ``{option: int(setting)}`` (e.g. the asymmetric sketch's enrolment margin). A
    picklable callable, not a closure: evaluations send it to worker processes.
    """

    option: str | None = None

    def __call__(self, sketch: SecureSketch[Any, Any], samples: Any, setting: Any = None) -> Any:
        options = {} if self.option is None else {self.option: int(setting)}
        return sketch.descriptor.secret_from_captures(sketch, list(samples), options)


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
    probe_for: ProbeFor = _no_probe
    min_enrol_samples: int = 1
    sweep_at_enrolment: bool = False

    def make_sketch(self, params: dict[str, Any], setting: Any) -> SecureSketch[Any, Any]:
        """The sketch at ``setting`` (``from_params`` raises ``ParameterError`` naming a bad parameter)."""
        merged = dict(params) if self.sweep_at_enrolment else {**params, self.sweep: setting}
        return scheme_class(self.scheme).from_params(merged)


def adapter_for(d: SchemeDescriptor) -> SchemeAdapter:
    """The adapter of a family, from its descriptor (``ParameterError`` if it has no sweep)."""
    if d.sweep is None:
        raise ParameterError(f"{d.name} has no swept parameter: the error-rate evaluation does not cover it")
    if d.template is not None:
        enrol: EnrolFn = TemplateEnrol(d.sweep if d.sweep_at_enrolment else None)
    else:
        enrol = SINGLE_TEMPLATES[d.sample_kind]
    return SchemeAdapter(
        scheme=d.name,
        data_kind=DATA_KINDS[d.sample_kind],
        sweep=d.sweep,
        enrol=ENROL_OVERRIDES.get(d.name, enrol),
        decide=ACCELERATED_DECIDERS.get(d.name, decide_batch),
        baseline_metrics=BASELINE_OVERRIDES.get(d.name, BASELINE_METRICS[d.sample_kind]),
        probe_for=PROBE_OVERRIDES.get(d.name, PROBES.get(d.sample_kind, _no_probe)),
        min_enrol_samples=d.min_captures,
        sweep_at_enrolment=d.sweep_at_enrolment,
    )


class _Adapters(Mapping[str, SchemeAdapter]):
    """Every registered family with a swept parameter → its adapter, derived on each look-up
    from the registry (a family registered after import, e.g. in a test, is included)."""

    def __getitem__(self, scheme: str) -> SchemeAdapter:
        try:
            d = scheme_descriptor(scheme)
        except ParameterError:  # unknown, or a composite without a descriptor
            raise KeyError(scheme) from None
        if d.sweep is None:
            raise KeyError(scheme)
        return adapter_for(d)

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, d in descriptors().items() if d.sweep is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: scheme name -> :class:`SchemeAdapter`, for every registered family with a ``sweep``.
ADAPTERS: Mapping[str, SchemeAdapter] = _Adapters()


def adapter(scheme: str) -> SchemeAdapter:
    """The adapter for a registered scheme (``ParameterError`` naming the known ones)."""
    try:
        return ADAPTERS[scheme]
    except KeyError:
        raise ParameterError(
            f"no evaluation adapter for scheme {scheme!r}; known: {', '.join(sorted(ADAPTERS))}"
        ) from None


def quantised_schemes() -> tuple[str, ...]:
    """The schemes whose quantiser :func:`fit_quantiser_params` can fit to the data (a ``step`` parameter)."""
    return tuple(name for name, d in descriptors().items() if "step" in d.parameters.names)


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
    if scheme not in quantised_schemes() or params.get("step") is None or "n" in params or "offset" in params:
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
