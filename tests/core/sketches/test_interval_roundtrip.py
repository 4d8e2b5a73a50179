"""Round trips of the interval family through every parameter form and the library doors.

Forms: integer features, a real ``step``, several features, signed features with an ``offset``
(given, or from :meth:`IntervalSketch.for_range`), an integer ``offset`` without a step, the
asymmetric sketches s1 and s2, and each of them under a PIN cascade (:class:`Cascade` with an
exact key). Doors: ``encode``/``decode``, :func:`sketchauth.enrolment.enrol`/``verify`` and the
cascade's ``enrol``/``verify``.

How samples respect the quantisation. A sketch with step ``δ`` and offset ``o`` maps ``x`` to the
level ``ℓ(x) = ⌊(x − o)/δ + 1/2⌋``. The strategies draw *levels* and turn each into a real value
``x = o + (ℓ + u)·δ`` with ``|u| ≤ 0.4``: at least a tenth of a step from either cell boundary,
so the value has level ``ℓ`` exactly whatever the floating-point rounding (the magnitudes drawn
keep the error of ``(x − o)/δ`` below 10⁻⁶). A real sample is then *within tolerance* of the
enrolled levels ``b`` iff ``|ℓ(x'_j) − b_j| ≤ v_j − 1`` for every feature ``j``, and *beyond* it
iff some feature has ``|ℓ(x'_j) − b_j| ≥ v_j`` (for s2: ``ℓ − b ≥ v`` or ``ℓ − b < −v``, since s2
also accepts ``ℓ = b − v``, as its module documents). Samples of a sketch with a step or an
offset are drawn inside its range ``[0, n)`` of levels (outside, the sketch refuses them).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import enrol, hasher, secret_message, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch, load_sketch
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.samples import Levels, Quantiser, as_levels, quantise

PH = hasher("test")
PIN = "2468-1357"
STEPS = st.sampled_from([0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 2.5, 7.0, 100.0])
KINDS = ("integer", "step", "signed", "range", "int-offset")


@dataclass(frozen=True)
class Case:
    """A sketch, the enrolled levels and the per-feature tolerance (in levels)."""

    sketch: SecureSketch
    kind: str
    b: np.ndarray
    v: np.ndarray

    @property
    def quantiser(self) -> Quantiser:
        return self.sketch.quantiser  # type: ignore[attr-defined]


def values(quantiser: Quantiser, levels: np.ndarray, jitter: np.ndarray) -> Any:
    """Caller values with exactly these levels (``jitter`` in [−0.4, 0.4] for real steps)."""
    if quantiser.step is None:
        return (np.asarray(levels, dtype=np.int64) + int(quantiser.offset or 0)).tolist()
    return ((quantiser.offset or 0.0) + (np.asarray(levels) + jitter) * quantiser.step).tolist()


def jitters(draw: st.DrawFn, features: int) -> np.ndarray:
    return np.array(draw(st.lists(st.floats(-0.4, 0.4), min_size=features, max_size=features)))


@st.composite
def interval_cases(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> Case:
    kind = draw(st.sampled_from(kinds))
    features = draw(st.integers(1, 6))
    if kind == "range":
        step = draw(STEPS)
        low = draw(st.integers(-2000, 0)) * step
        width = draw(st.integers(1, 3000)) * step
        q = Quantiser.covering(low, low + width, step)
        v = draw(st.lists(st.integers(1, max(1, q.n // 2)), min_size=features, max_size=features))
        sketch = IntervalSketch.for_range(low, low + width, step=step, v=v)
    else:
        n = draw(st.integers(2, 3000))
        v = draw(st.lists(st.integers(1, max(1, n // 2)), min_size=features, max_size=features))
        step = draw(STEPS) if kind in ("step", "signed") else None
        offset: float | int | None = None
        if kind == "signed":
            offset = -draw(st.integers(0, 4000)) * step / draw(st.sampled_from([1, 2, 3]))  # type: ignore[operator]
        elif kind == "int-offset":
            offset = draw(st.integers(-(10**6), 10**6))
        sketch = IntervalSketch(n, v, step=step, offset=offset)
    b = np.array(draw(st.lists(st.integers(0, sketch.n - 1), min_size=features, max_size=features)))
    return Case(sketch, kind, b, sketch.v.copy())


@st.composite
def asymmetric_cases(draw: st.DrawFn) -> Case:
    scheme = draw(st.sampled_from(("s1", "s2")))
    kind = draw(st.sampled_from(("integer", "step", "signed")))
    features = draw(st.integers(1, 4))
    n = draw(st.integers(2, 600))
    q = draw(st.integers(1, min(n, 16)))
    step = draw(STEPS) if kind != "integer" else None
    offset = -draw(st.integers(0, 3000)) * step if kind == "signed" else None  # type: ignore[operator]
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme, features=features, step=step, offset=offset)
    b = np.array(draw(st.lists(st.integers(0, n - 1), min_size=features, max_size=features)))
    v = np.array(draw(st.lists(st.integers(1, q), min_size=features, max_size=features)))
    return Case(sketch, kind, b, v)


def within(draw: st.DrawFn, case: Case) -> np.ndarray:
    """Levels with ``|d − b| ≤ v − 1`` per feature, inside ``[0, n)``."""
    n = case.sketch.n  # type: ignore[attr-defined]
    return np.array(
        [
            draw(st.integers(max(0, bj - vj + 1), min(n - 1, bj + vj - 1)))
            for bj, vj in zip(case.b.tolist(), case.v.tolist(), strict=False)
        ]
    )


def beyond(draw: st.DrawFn, case: Case) -> np.ndarray:
    """``within`` except one feature at ``|d − b| ≥ v`` (s2: ``d − b ≥ v`` or ``< −v``), in ``[0, n)``."""
    n = case.sketch.n  # type: ignore[attr-defined]
    d = within(draw, case)
    j = draw(st.integers(0, d.size - 1))
    bj, vj = int(case.b[j]), int(case.v[j])
    s2 = getattr(case.sketch, "scheme", None) == "s2"
    options = [x for x in (bj + vj, bj - vj - 1 if s2 else bj - vj) if 0 <= x < n]
    assume(options)
    near = draw(st.sampled_from(options))
    far = draw(st.integers(0, n - 1)) if n > 1 else near
    candidate = draw(st.sampled_from([near, far]))
    too_far = candidate - bj >= vj or (candidate - bj < -vj if s2 else candidate - bj <= -vj)
    d[j] = candidate if too_far else near
    return d


def secret_of(case: Case, jitter: np.ndarray) -> Any:
    if isinstance(case.sketch, AsymmetricIntervalSketch):
        return (case.b.tolist(), case.v.tolist())
    return values(case.quantiser, case.b, jitter)


# -- the quantiser --------------------------------------------------------------------------------


def test_quantiser_formula_and_range() -> None:
    q = Quantiser(n=8, step=0.5, offset=-2.0)
    # ⌊(x + 2)/0.5 + 1/2⌋: cell k is [−2 + (k − ½)·0.5, −2 + (k + ½)·0.5)
    assert q.levels([-2.25, -2.0, -1.76, -1.75, 1.74], 5).tolist() == [0, 0, 0, 1, 7]
    assert q.value_range() == (-2.25, 1.75)
    with pytest.raises(SampleError, match=r"feature 1 lies outside \[-2.25, 1.75\)"):
        q.levels([0.0, 1.75], 2)
    with pytest.raises(SampleError, match="feature 0 lies outside"):
        q.levels([-2.2500001, 0.0], 2)
    # Integers shifted by an integer offset: the level is x − o, range [o, o + n).
    shift = Quantiser(n=256, offset=-128)
    assert shift.levels([-128, 0, 127], 3).tolist() == [0, 128, 255]
    assert shift.value_range() == (-128, 128)
    with pytest.raises(SampleError, match=r"feature 2 lies outside \[-128, 128\)"):
        shift.levels([0, 0, 128], 3)
    with pytest.raises(SampleError, match="not an integer"):
        shift.levels([0.5, 0, 0], 3)
    # Without a step or an offset integers are levels as they are, anywhere.
    assert Quantiser(n=10).levels([-5, 12], 2).tolist() == [-5, 12]


def test_halves_round_up_and_grid_points_are_robust() -> None:
    assert quantise(np.array([-1.5, -0.5, 0.5, 1.5, 2.5]), 1.0).tolist() == [-1, 0, 1, 2, 3]
    # 0.1·k is not exact in binary, yet every grid point maps to its own level.
    q = Quantiser(n=10**6, step=0.1, offset=-3.7)
    k = np.arange(0, 10**6, 997)
    assert np.array_equal(q.levels(-3.7 + 0.1 * k, k.size), k)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": 10, "step": 0.0},
        {"n": 10, "step": math.inf},
        {"n": 10, "step": True},
        {"n": 10, "step": 0.5, "offset": math.nan},
        {"n": 10, "step": 0.5, "offset": "0"},
        {"n": 10, "offset": 0.5},  # no step: an integer offset only
        {"n": 10, "offset": 2**53},
    ],
)
def test_quantiser_parameters(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ParameterError):
        Quantiser(**kwargs)


def test_covering_accepts_both_ends() -> None:
    for low, high, step in [(-1.0, 1.0, 0.1), (-0.3, 0.7, 0.1), (-4.0, 4.0, 0.05), (-1e-3, 0.0, 1e-4), (0.1, 0.7, 0.2)]:
        q = Quantiser.covering(low, high, step)
        assert q.levels([low, high], 2).tolist() == [0, q.n - 1]
    # A range under half a step still gets two levels (n ≥ 2); both ends are level 0.
    tiny = Quantiser.covering(0.0, 1.0, 3.0)
    assert tiny.n == 2 and tiny.levels([0.0, 1.0], 2).tolist() == [0, 0]
    assert (Quantiser.covering(-1.0, 1.0, 0.25).n, Quantiser.covering(-1.0, 1.0, 0.25).offset) == (9, -1.0)
    with pytest.raises(ParameterError):
        Quantiser.covering(1.0, 1.0, 0.1)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 500),
    st.one_of(st.none(), STEPS),
    st.integers(-300, 300),
    st.lists(
        st.lists(st.floats(-400, 400) | st.integers(-600, 600) | st.just(math.nan), min_size=3, max_size=3),
        min_size=1,
        max_size=8,
    ),
)
def test_levels_many_agrees_with_levels_row_by_row(
    n: int, step: float | None, shift: int, rows: list[list[Any]]
) -> None:
    q = Quantiser(n, step, shift * (step or 1) if step else shift)
    matrix = np.array(rows, dtype=float)
    if step is None:
        matrix = np.where(np.isnan(matrix), matrix, np.round(matrix))
    levels, malformed = q.levels_many(matrix, 3)
    for row, lv, bad in zip(matrix, levels, malformed, strict=False):
        try:
            expected = q.levels(row, 3)
        except SampleError:
            assert bad
        else:
            assert not bad and lv.tolist() == expected.tolist()


def test_levels_are_not_quantised_twice_and_arithmetic_drops_the_mark() -> None:
    q = Quantiser(n=100, step=0.5)
    lv = q.levels([3.0, 4.0], 2)
    assert isinstance(lv, Levels) and lv.tolist() == [6, 8]
    assert q.levels(lv, 2) is lv  # not 12, 16
    assert type(lv + 1) is np.ndarray and type(lv[:1]) is Levels
    assert as_levels([6, 8]).tolist() == [6, 8] and isinstance(as_levels(np.array([1])), Levels)
    with pytest.raises(SampleError):
        as_levels([1.5])


# -- the reported defect: a real-valued enrolment must verify ---------------------------------------


def test_real_valued_enrolment_verifies() -> None:
    s = IntervalSketch(n=256, v=8, features=3, step=0.5)
    r = enrol(s, [1.25, 2.5, 3.75], password_hasher=PH)
    assert verify(s, r, [1.25, 2.5, 3.75], password_hasher=PH)
    # 1.25/0.5 = 2.5 → 3, 5, 7.5 → 8 (halves up); quantised once, not [6, 10, 1].
    assert s.decode(r.helper, [1.25, 2.5, 3.75]).tolist() == [3, 5, 8]
    assert s.check_secret([1.25, 2.5, 3.75]).tolist() == [3, 5, 8]
    assert verify(s, r, [1.25 + 3.5, 2.5 + 3.5, 3.75], password_hasher=PH)  # 7 levels away
    assert not verify(s, r, [1.25 + 4.0, 2.5, 3.75], password_hasher=PH)  # 8 levels away


@pytest.mark.parametrize(
    "sketch, kind",
    [
        (IntervalSketch(n=256, v=8, features=3, step=0.5), "step"),
        (IntervalSketch(n=256, v=[2, 3, 4], step=0.1, offset=-12.8), "signed"),
        (IntervalSketch(n=256, v=8, features=3, offset=-128), "int-offset"),
    ],
    ids=["step", "signed", "int-offset"],
)
def test_normalising_is_idempotent(sketch: IntervalSketch, kind: str) -> None:
    x = {"step": [1.5, 2.0, 3.5], "signed": [1.0, -0.5, 2.0], "int-offset": [-100, 0, 27]}[kind]
    once = sketch.check_secret(x)
    assert sketch.check_secret(once).tolist() == once.tolist()
    assert sketch.encode(once) == sketch.encode(x) == sketch.encode(sketch.check_secret(once))
    assert sketch.secret_bytes(x) == sketch.secret_bytes(once)
    assert secret_message(sketch, x) == secret_message(sketch, sketch.decode(sketch.encode(x), x))
    # Re-enrolling from a recovered secret sketches the same levels.
    assert sketch.encode(sketch.decode(sketch.encode(x), x)) == sketch.encode(x)


# -- signed features and the range ---------------------------------------------------------------------


def test_signed_features_without_an_offset_are_refused_with_the_range() -> None:
    s = IntervalSketch(n=256, v=8, features=3, step=0.5)
    record = enrol(s, [1.25, 2.5, 3.75], password_hasher=PH)
    for door in (
        lambda: s.encode([1.0, -0.3, 2.0]),
        lambda: enrol(s, [1.0, -0.3, 2.0], password_hasher=PH),
        lambda: s.decode(record.helper, [1.25, -0.3, 3.75]),
        lambda: verify(s, record, [1.25, -0.3, 3.75], password_hasher=PH),
    ):
        with pytest.raises(SampleError) as err:
            door()
        message = str(err.value)
        assert "feature 1" in message and "[-0.25, 127.75)" in message and "offset" in message
        assert "-0.3" not in message  # the value itself is never echoed


def test_signed_features_with_an_offset_round_trip() -> None:
    s = IntervalSketch.for_range(-1.0, 1.0, step=0.01, v=5, features=4)
    assert (s.n, s.offset, s.step) == (201, -1.0, 0.01)
    x = [-0.73, 0.0, 0.41, -1.0]
    record = enrol(s, x, password_hasher=PH)
    assert verify(s, record, x, password_hasher=PH)
    assert verify(s, record, [-0.69, 0.04, 0.37, -0.96], password_hasher=PH)  # 4 levels away
    assert not verify(s, record, [-0.68, 0.0, 0.41, -1.0], password_hasher=PH)  # 5 levels away
    with pytest.raises(SampleError, match=r"feature 3 lies outside \[-1.005, 1.005\)"):
        verify(s, record, [-0.73, 0.0, 0.41, -1.01], password_hasher=PH)


def test_offset_is_a_scheme_parameter_in_the_helper() -> None:
    s = IntervalSketch(n=100, v=[2, 3], step=0.25, offset=-12.5)
    assert s.params() == {"n": 100, "v": [2, 3], "features": 2, "step": 0.25, "offset": -12.5}
    helper = s.encode([-1.0, 3.0])
    again = load_sketch(helper)
    assert again == s and again.decode(helper, [-1.1, 3.2]).tolist() == [46, 62]
    assert IntervalSketch.from_params(s.params()) == s
    # Without an offset the parameters are exactly what they were before offsets existed.
    assert IntervalSketch(n=100, v=3, features=2).params() == {"n": 100, "v": 3, "features": 2, "step": None}
    assert IntervalSketch(n=100, v=3, features=2, step=0.5, offset=0.0).params() == {
        "n": 100,
        "v": 3,
        "features": 2,
        "step": 0.5,
    }
    # Helper data is strict: an explicit default, or an offset of the wrong type, is refused.
    payload = s.payload(helper)
    for params in (
        {"n": 100, "v": [2, 3], "features": 2, "step": 0.25, "offset": 0.0},
        {"n": 100, "v": [2, 3], "features": 2, "step": None, "offset": 0.5},
        {"n": 100, "v": [2, 3], "features": 2, "step": 0.25, "offset": None},
    ):
        with pytest.raises(SketchFormatError):
            load_sketch(pack_helper(1, params, payload))
    with pytest.raises(SketchFormatError):
        s.decode(IntervalSketch(n=100, v=[2, 3], step=0.25).encode([1.0, 3.0]), [1.0, 3.0])


def test_asymmetric_offset_parameters_and_refusals() -> None:
    s = AsymmetricIntervalSketch.for_range(-2.0, 2.0, step=0.1, q=8, scheme="s2", features=2)
    assert s.params() == {"n": 41, "q": 8, "scheme": "s2", "features": 2, "step": 0.1, "offset": -2.0}
    assert load_sketch(s.encode(([3, 40], [2, 8]))) == s
    # levels (x + 2)/0.1 rounded: feature 0: 3, 4, 2 → b = 3, v = 2 + 1; feature 1: 39, 40, 40 → b = 40, v = 2
    secret = s.template([[-1.7, 1.9], [-1.62, 1.96], [-1.77, 1.99]])
    assert [x.tolist() for x in secret] == [[3, 40], [3, 2]]
    record = enrol(s, secret, password_hasher=PH)
    assert verify(s, record, [-1.68, 1.94], password_hasher=PH)
    assert not verify(s, record, [-1.68, 1.74], password_hasher=PH)  # level 37 (s2 also accepts b − v = 38)
    with pytest.raises(SampleError, match=r"feature 1 lies outside \[-2.05, 2.05\)"):
        verify(s, record, [-1.68, 2.06], password_hasher=PH)
    with pytest.raises(SampleError, match="sample 2 feature 0 lies outside"):
        s.template([[-1.7, 1.9], [-1.62, 1.96], [-2.2, 2.0]])
    with pytest.raises(ParameterError):
        AsymmetricIntervalSketch(10, 2, offset=1.5)  # no step: an integer offset only


def test_integer_sketches_keep_lattice_semantics_outside_the_universe() -> None:
    # Without a step or an offset an integer sample is a level: one just outside [0, n) within
    # the tolerance of an enrolled edge level recovers it; a far one fails to decode.
    s = IntervalSketch(n=10, v=3)
    assert s.decode(s.encode([0]), [-2]).tolist() == [0]
    with pytest.raises(DecodeError):
        s.decode(s.encode([1]), [-2])
    with pytest.raises(SampleError, match=r"outside the levels \[0, 10\)"):
        s.encode([10])


# -- round trips: every form, every library door --------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interval_cases(), st.data())
def test_interval_forms_round_trip_through_enrol_and_verify(case: Case, data: st.DataObject) -> None:
    s = case.sketch
    features = case.b.size
    x = secret_of(case, jitters(data.draw, features))
    record = enrol(s, x, password_hasher=PH)
    assert s.decode(record.helper, x).tolist() == case.b.tolist()
    assert verify(s, record, x, password_hasher=PH)
    near = values(case.quantiser, within(data.draw, case), jitters(data.draw, features))
    assert verify(s, record, near, password_hasher=PH)
    far = values(case.quantiser, beyond(data.draw, case), jitters(data.draw, features))
    assert not verify(s, record, far, password_hasher=PH)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(asymmetric_cases(), st.data())
def test_asymmetric_forms_round_trip_through_enrol_and_verify(case: Case, data: st.DataObject) -> None:
    s = case.sketch
    features = case.b.size
    record = enrol(s, secret_of(case, np.zeros(features)), password_hasher=PH)
    centre = values(case.quantiser, case.b, jitters(data.draw, features))
    assert verify(s, record, centre, password_hasher=PH)
    near = values(case.quantiser, within(data.draw, case), jitters(data.draw, features))
    assert verify(s, record, near, password_hasher=PH)
    far = values(case.quantiser, beyond(data.draw, case), jitters(data.draw, features))
    assert not verify(s, record, far, password_hasher=PH)


@st.composite
def captures(draw: st.DrawFn, case: Case) -> np.ndarray:
    """2–5 captures' levels within ``⌊(q − 1)/2⌋`` of ``b`` and in range: their tolerance is not clipped."""
    q, n = case.sketch.q, case.sketch.n  # type: ignore[attr-defined]
    half = (q - 1) // 2
    k = draw(st.integers(2, 5))
    rows = [[draw(st.integers(max(0, bj - half), min(n - 1, bj + half))) for bj in case.b.tolist()] for _ in range(k)]
    return np.array(rows)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(asymmetric_cases(), st.data())
def test_every_enrolment_capture_verifies_under_its_own_template(case: Case, data: st.DataObject) -> None:
    s = case.sketch
    levels = data.draw(captures(case))
    raw = [values(case.quantiser, row, jitters(data.draw, row.size)) for row in levels]
    b, v = s.template(raw)  # type: ignore[attr-defined]
    # The documented rule on levels: b = mean rounded half up, v = range + 1 (range ≤ q − 1 here).
    k = levels.shape[0]
    assert b.tolist() == ((2 * levels.sum(axis=0) + k) // (2 * k)).tolist()
    assert v.tolist() == (levels.max(axis=0) - levels.min(axis=0) + 1).tolist()
    record = enrol(s, (b, v), password_hasher=PH)
    for capture in raw:
        assert verify(s, record, capture, password_hasher=PH)


def _cascade(sketch: SecureSketch) -> Cascade:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Cascade(sketch, pin=ExactKey("test"), warn=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(interval_cases(), asymmetric_cases()), st.data())
def test_every_form_round_trips_under_a_pin_cascade(case: Case, data: st.DataObject) -> None:
    cascade = _cascade(case.sketch)
    features = case.b.size
    x = secret_of(case, jitters(data.draw, features))
    record = enrol(cascade, [x, PIN], password_hasher=PH)
    centre = values(case.quantiser, case.b, jitters(data.draw, features))
    assert verify(cascade, record, [centre, PIN], password_hasher=PH)
    near = values(case.quantiser, within(data.draw, case), jitters(data.draw, features))
    assert verify(cascade, record, [near, PIN], password_hasher=PH)
    assert not verify(cascade, record, [near, PIN + "0"], password_hasher=PH)
    far = values(case.quantiser, beyond(data.draw, case), jitters(data.draw, features))
    assert not verify(cascade, record, [far, PIN], password_hasher=PH)
    # The cascade's helper names the component's quantiser: load_sketch rebuilds it exactly.
    assert load_sketch(record.helper) == cascade


def test_cascade_refuses_out_of_range_samples_with_the_component_message() -> None:
    cascade = _cascade(IntervalSketch(n=256, v=8, features=3, step=0.5))
    record = enrol(cascade, [[1.25, 2.5, 3.75], PIN], password_hasher=PH)
    assert verify(cascade, record, [[1.25, 2.5, 3.75], PIN], password_hasher=PH)
    with pytest.raises(SampleError, match=r"feature 2 lies outside \[-0.25, 127.75\)"):
        verify(cascade, record, [[1.25, 2.5, -3.75], PIN], password_hasher=PH)
