"""Cascaded mixing of several secrets: a PIN, password or second biometric over a biometric's sketch.

Fang's thesis, ch. 7. A biometric cannot be replaced; a PIN can. A *cascade* encrypts the biometric's sketch
``S_1`` with a key ``K`` from the less important secret, ``Q = f(S_1, K, R_f)``, so the entropy
loss of ``S_1`` is diverted to that secret. The package holds, one job per module,

* :mod:`sketchauth.mixing.pads`: the **format-preserving mixing function** ``f``, generic over
  every family's symbol interface (:meth:`SecureSketch.symbols`): a keyed pad added modulo each
  symbol's modulus (``SymbolSpace("mod")``: interval offsets, vault values, chaff ranks,
  asymmetric offsets) or XORed onto each word (``SymbolSpace("xor")``: PinSketch syndromes,
  code-offset bytes). Every key, right or wrong, inverts ``Q`` to a *valid* sketch of the same
  scheme, so a wrong key is never recognisable by a malformed result (redundancy would let an
  attacker test keys offline). The pad is SHAKE-256 of ``("sketchauth/mix-pad/v1", sketch index,
  R_f, K)``, ``R_f`` a 16-byte nonce from :mod:`secrets` stored in the helper; each pad symbol is
  drawn *exactly* uniformly by rejection sampling of 64-bit words (``w < 2^64 − (2^64 mod m)``),
  so no bias bound is needed. ``f`` is invertible (subtract the pad) and randomness-recoverable
  (``R_f`` is stored). Its key recoverability ``β`` is reported by
  :func:`sketchauth.mixing.bounds.key_recoverability_bits`. Also the Toeplitz extractor.
* :mod:`sketchauth.mixing.keys`: the **keys**, both behind the :class:`~sketchauth.mixing.keys.SecretKey`
  protocol: :class:`ExactKey` (PIN/password → argon2id with its own 16-byte salt and a profile
  of :data:`sketchauth.enrolment.HASH_PROFILES`, so each offline guess costs a slow hash) and
  :class:`FuzzySecret` (a second biometric with its own sketch; its key is a Toeplitz-matrix
  universal hash over GF(2) of its recovered canonical bytes, seeded by a public random seed
  stored in the helper: a strong extractor by the leftover hash lemma, overhead ``δ`` and
  distance ``ε = 2^(−δ/2)`` reported).
* :mod:`sketchauth.mixing.structures`: the **structures**, each a :class:`SecureSketch` of scheme
  ``"mixed"`` sharing ``encode(secrets)`` / ``decode(helper, samples)`` with one secret and one
  sample per component: :class:`Concatenate`, :class:`Cascade`, :class:`Fanning`,
  :class:`Chaining` and :class:`Hybrid` (any forest "key ``j`` mixes sketch ``i``").
  ``load_sketch(helper)`` rebuilds the right one from the helper's parameters.
* :mod:`sketchauth.mixing.payload`: the helper **payload format** and :class:`MixRandomness`.
* :mod:`sketchauth.mixing.bounds`: the **entropy accounting** (Fang's thesis, ch. 7: Lemma 6,
  Theorems 7 and 8, the two-fuzzy-secret bounds, ``β``) and exact checks on toy cascades.

Usage (a PinSketch biometric and a 6-digit PIN; enrol/verify work unchanged)::

    from sketchauth.enrolment import enrol, verify
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("owasp"))
    record = enrol(cascade, [enrolled_set, "123456"])
    verify(cascade, record, [sample_set, "123456"])            # True
    cascade.decode(record.helper, [sample_set, "123456"])      # [recovered set, "123456"]

Secrets and samples hold one entry per component, in component order: a list, a tuple or any
ordered iterable (a generator is read once); a set or a mapping is refused, since it has no order.
Each entry is whatever its component takes — a Python ``set`` for a PinSketch biometric, a ``str``
PIN (a PIN given as an ``int`` is refused: it would lose its leading zeros).

``secret_bytes`` of a mixed sketch is the length-prefixed concatenation of each component's
canonical bytes. With a wrong PIN, decode unmixes to a well-formed sketch and then returns a
different secret or raises :class:`DecodeError` — never a format error.

Accounting (:meth:`MixedSketch.mixing_report`, also in ``report().extra``): per secret, the
concatenation bound next to Lemma 6, Theorem 7, Theorem 8 and the two-fuzzy-secret bounds
(:mod:`sketchauth.mixing.bounds`). The guidelines of Fang's thesis, ch. 7 are enforced as
:class:`MixingWarning` at construction.

Helper payload, per component in order: ``u32 length ‖ inner helper`` (fuzzy, the mixed ``Q``
or the clear sketch: itself a complete helper of the component's scheme), then a 16-byte nonce
if that sketch is mixed, a 16-byte argon2 salt for an exact key, and ``u32 length ‖ seed`` for
a fuzzy secret whose key mixes something.
"""

from __future__ import annotations

from sketchauth.mixing.keys import SALT_BYTES, ExactKey, FuzzySecret
from sketchauth.mixing.pads import (
    NONCE_BYTES,
    derive_pad,
    mix_helper,
    mix_symbols,
    toeplitz_extract,
    unmix_helper,
    unmix_symbols,
)
from sketchauth.mixing.payload import MixRandomness
from sketchauth.mixing.structures import Cascade, Chaining, Concatenate, Fanning, Hybrid, MixedSketch

__all__ = [
    "NONCE_BYTES",
    "SALT_BYTES",
    "Cascade",
    "Chaining",
    "Concatenate",
    "ExactKey",
    "Fanning",
    "FuzzySecret",
    "Hybrid",
    "MixRandomness",
    "MixedSketch",
    "derive_pad",
    "mix_helper",
    "mix_symbols",
    "toeplitz_extract",
    "unmix_helper",
    "unmix_symbols",
]
