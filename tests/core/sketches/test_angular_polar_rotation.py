"""Why the polar decoder multiplies ``R̂`` out: the reflections on the probe give other decisions.

The angular family decodes through the reflections (``O(n²)``) and computes exact rows of ``R̂`` where
its decision needs them. The polar list decoder reads *every* coordinate of ``y = R̂p̂`` (28 bits of
each, :func:`~sketchauth.sketches.polar.decoder_inputs`), and each entry of ``R̂ = round(2^14·R')`` is
rounded on its own: ``R̂p̂ = 2^14·R'p̂ − Ep̂`` with ``|E_ij| ≤ ½``, about ``‖p̂‖/√12`` per coordinate —
a relative change near ``3·10^−4`` of the decoder's inputs, far above their resolution, which no
``O(n²)`` computation recovers (``Ep̂`` needs all ``n²`` rounding errors). The list decoder's choice is
piecewise constant in its inputs, so such a change moves decisions near its boundaries: these seeded
probes at ``n = 128`` (64 bits, list 8, near the cosine where half decode) are decided one way on
``R̂p̂`` and the other on ``rint(2^14·R'p̂)`` (``benchmarks/bench_angular_enrol.py`` counts them).
The real decoder must follow ``R̂p̂``, the input of the vectorised decider too.
"""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.errors import DecodeError
from sketchauth.sketches import _rotation
from sketchauth.sketches.angular import Codeword, quantise_probe
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.polar import decode_batch, signs

N, BITS, LIST = 128, 64, 8


def _case(seed: int, index: int) -> tuple[PolarAngularSketch, bytes, Codeword, np.ndarray]:
    """The seeded helper and the ``index``-th of 100 probes at cosines ``0.725 ± 0.05`` to its template."""
    sketch = PolarAngularSketch(N, BITS, LIST)
    rng = np.random.default_rng(seed)
    template = rng.normal(size=N)
    template /= np.linalg.norm(template)
    secret = sketch.random_codeword(rng).view(Codeword)
    secret.template = template
    helper = sketch.encode_with(secret, sketch.simulated_randomness(secret, rng))
    cosines = 0.725 + rng.uniform(-0.05, 0.05, 100)
    for k, cos in enumerate(cosines.tolist()):
        u = rng.normal(size=N)
        u -= (u @ template) * template
        probe = cos * template + np.sqrt(1.0 - cos * cos) * u / np.linalg.norm(u)
        if k == index:
            return sketch, helper, secret, probe
    raise AssertionError("index out of range")


def _accepts(sketch: PolarAngularSketch, helper: bytes, secret: Codeword, probe: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(sketch.decode(helper, probe), secret))
    except DecodeError:
        return False


@pytest.mark.parametrize(("seed", "index", "accepted"), [(57, 54, False), (98, 21, True), (124, 44, True)])
def test_polar_decoder_follows_the_expanded_fixed_point_rotation(seed: int, index: int, accepted: bool) -> None:
    sketch, helper, secret, probe = _case(seed, index)
    p = quantise_probe(probe)
    exact = sketch.matrix(helper) @ p  # R̂p̂: integers, exact in float64
    on_exact = np.array_equal(signs(decode_batch(exact[None, :], sketch.code, LIST)[0]), secret)
    assert _accepts(sketch, helper, secret, probe) is accepted
    assert on_exact is accepted
    # The O(n²) input decides otherwise on this probe: the decoder cannot take it in R̂p̂'s place.
    flat, s, r = _rotation.unpack(sketch.payload(helper), N)
    through = np.rint(_rotation.Reflections(flat, s, r).apply(p) * 2.0**14)
    assert 0 < np.abs(through - exact).max() < 1e-3 * np.abs(exact).max()
    on_reflections = np.array_equal(signs(decode_batch(through[None, :], sketch.code, LIST)[0]), secret)
    assert on_reflections is not accepted
