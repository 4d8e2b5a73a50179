"""Real deep biometric embeddings for measurements: a local cache, its loader and rebuild recipes.

Modern face and voice systems hand out one float vector per capture (a 512-D ArcFace/FaceNet
face embedding, a 192-D ECAPA or 256-D GE2E speaker embedding) and compare two captures by the
cosine of their angle. The sketches for such vectors are measured here on *real* embeddings of
real people, never on simulated ones. None of these sets is part of the repository: their
sources either carry no licence that allows redistribution, or are face images and recordings of
people; benchmarks read a **local cache** and this module says how to rebuild it.

The cache is a directory — ``$SKETCHAUTH_EMBEDDINGS_DIR``, else
``~/.cache/sketchauth/embeddings`` — holding, per set, ``<name>.npz`` (arrays ``X``: float32
``[n, d]``, one row per capture; ``labels``: ``[n]`` unicode identity labels) and
``<name>.json`` (provenance: source repository and commit or package version, model, dimension,
identities, captures, licence, how it was built). Use::

    from benchmarks.deep_embeddings import load
    X, labels = load("lfw-dlib")          # raises CacheMissing with the rebuild recipe

or, from the repository root::

    python benchmarks/deep_embeddings.py list              # known sets, built or not
    python benchmarks/deep_embeddings.py build NAME --source DIR
    python benchmarks/deep_embeddings.py info NAME

``build`` takes ``--source``: a directory holding the public source named in the set's recipe
(a checkout of a public repository at the stated commit, or a directory of recordings or
images); it never downloads anything. Every recipe keeps the embeddings exactly as the source or
the model produced them (float32, not normalised): whoever measures decides whether to
L2-normalise.

The sets (``SETS``; sources, licences and recipes there):

* ``lfw-dlib`` — faces: dlib's 128-D ResNet descriptor of LFW deep-funneled images, the 610 people
  with at least 4 images, their first 10 each (3,989 captures);
* ``lfw-dlib-all`` — the same on every LFW image (13,233 captures of 5,749 people), for attacks
  that need many embeddings of other people;
* ``lfw-facenet-keras`` — faces: 512-D FaceNet embeddings of 1,435 LFW images committed by a
  public repository (77 people with at least 4);
* ``librispeech-ge2e`` — voices: 256-D GE2E d-vectors of LibriSpeech utterances of speakers the
  encoder never saw.

Every measurement splits a set the same way, :func:`identity_split` (fixed seed): background,
calibration and evaluation people, disjoint.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The environment variable naming the cache directory.
CACHE_ENV = "SKETCHAUTH_EMBEDDINGS_DIR"


class CacheMissing(FileNotFoundError):
    """A set is not in the local cache; the message says how to build it."""


@dataclass(frozen=True, slots=True)
class EmbeddingSet:
    """A known set of real embeddings: what it is, where it comes from, and how to rebuild it."""

    name: str
    modality: str
    model: str
    source: str
    licence: str
    recipe: str
    build: Callable[[Path], tuple[np.ndarray, np.ndarray, dict[str, Any]]]


def cache_dir() -> Path:
    """The cache directory: ``$SKETCHAUTH_EMBEDDINGS_DIR``, else ``~/.cache/sketchauth/embeddings``.

    >>> import os
    >>> os.environ[CACHE_ENV] = "/tmp/x"; str(cache_dir()); del os.environ[CACHE_ENV]
    '/tmp/x'
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "sketchauth" / "embeddings"


def _paths(name: str, directory: Path | None) -> tuple[Path, Path]:
    folder = cache_dir() if directory is None else directory
    return folder / f"{name}.npz", folder / f"{name}.json"


def available(directory: Path | None = None) -> list[str]:
    """Names of the known sets whose files are in the cache."""
    return [name for name in SETS if all(p.is_file() for p in _paths(name, directory))]


def load(name: str, directory: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, labels)`` of a cached set: float32 ``[n, d]`` and ``[n]`` unicode identity labels.

    Raises :class:`CacheMissing` (with the rebuild recipe) when the set is not cached and
    :class:`KeyError` for a name no recipe knows.
    """
    if name not in SETS:
        raise KeyError(f"unknown embedding set {name!r}; known: {', '.join(SETS)}")
    data_path, _ = _paths(name, directory)
    if not data_path.is_file():
        raise CacheMissing(f"{data_path} is missing. {SETS[name].recipe}")
    with np.load(data_path, allow_pickle=False) as archive:
        X = np.asarray(archive["X"], dtype=np.float32)
        labels = np.asarray(archive["labels"]).astype(str)
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise ValueError(f"{data_path}: X {X.shape} and labels {labels.shape} do not match")
    return X, labels


def provenance(name: str, directory: Path | None = None) -> dict[str, Any]:
    """The provenance record (``<name>.json``) of a cached set."""
    _, meta_path = _paths(name, directory)
    if not meta_path.is_file():
        raise CacheMissing(f"{meta_path} is missing. {SETS[name].recipe}")
    record: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
    return record


def counts(labels: np.ndarray) -> dict[str, int]:
    """Identities, captures and how many identities have at least 2 / 4 / 10 captures.

    >>> counts(np.array(["a", "a", "b", "a", "a"]))
    {'captures': 5, 'identities': 2, 'identities_ge2': 1, 'identities_ge4': 1, 'identities_ge10': 0}
    """
    per_identity = collections.Counter(labels.tolist())
    return {
        "captures": int(labels.shape[0]),
        "identities": len(per_identity),
        **{f"identities_ge{k}": sum(1 for c in per_identity.values() if c >= k) for k in (2, 4, 10)},
    }


def save(
    name: str, X: np.ndarray, labels: np.ndarray, record: dict[str, Any], directory: Path | None = None
) -> tuple[Path, Path]:
    """Write ``<name>.npz`` and ``<name>.json`` (the record, completed with dims, counts and a digest)."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    labels = np.asarray(labels).astype(str)
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise ValueError(f"X {X.shape} and labels {labels.shape} do not match")
    if not np.isfinite(X).all():
        raise ValueError(f"{name}: the embeddings hold non-finite values")
    data_path, meta_path = _paths(name, directory)
    data_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(data_path, X=X, labels=labels)
    digest = hashlib.sha256(X.tobytes() + "\n".join(labels.tolist()).encode()).hexdigest()
    full = {"name": name, **record, "dims": int(X.shape[1]), **counts(labels), "sha256_X_labels": digest}
    meta_path.write_text(json.dumps(full, indent=2) + "\n", encoding="utf-8")
    return data_path, meta_path


# --- the identity-disjoint split every measurement on these sets uses ----------------------------

#: Seed of :func:`identity_split` (fixed: every benchmark splits each set the same way).
SPLIT_SEED = 20210619
#: Shares of the eligible identities: background (fit / tune), calibration (choose thresholds), evaluation.
SPLIT_FRACTIONS = (0.35, 0.15, 0.50)
#: Captures an identity needs to take part in genuine trials: 3 enrolment captures and at least one probe.
MIN_CAPTURES = 4


def identity_split(
    labels: np.ndarray,
    *,
    seed: int = SPLIT_SEED,
    fractions: tuple[float, float, float] = SPLIT_FRACTIONS,
    min_captures: int = MIN_CAPTURES,
) -> dict[str, np.ndarray]:
    """Identity-disjoint parts of a set: ``background``, ``calibration``, ``evaluation``, ``background_short``.

    The identities with at least ``min_captures`` captures, sorted, are permuted by
    ``numpy.random.default_rng(seed)``; the first ``round(fractions[2] * n)`` are the evaluation
    people, the next ``round(fractions[1] * n)`` the calibration people, the rest the background.
    Identities with fewer captures can only be impostors: they are ``background_short`` (part of
    the background population, never enrolled). Each value is a sorted array of identity labels.

    >>> split = identity_split(np.array(list("aaaabbbbccccddddeeeeffffgggghhhhiiiijjjjk")))
    >>> {k: len(v) for k, v in split.items()}
    {'background': 3, 'calibration': 2, 'evaluation': 5, 'background_short': 1}
    """
    if len(fractions) != 3 or min(fractions) < 0 or not math.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must be three non-negative shares summing to 1, got {fractions}")
    per_identity = collections.Counter(np.asarray(labels).astype(str).tolist())
    eligible = np.array(sorted(k for k, c in per_identity.items() if c >= min_captures), dtype=str)
    short = np.array(sorted(k for k, c in per_identity.items() if c < min_captures), dtype=str)
    order = np.random.default_rng(seed).permutation(eligible.size)
    n_eval = round(fractions[2] * eligible.size)
    n_cal = round(fractions[1] * eligible.size)
    shuffled = eligible[order]
    return {
        "background": np.sort(shuffled[n_eval + n_cal :]),
        "calibration": np.sort(shuffled[n_eval : n_eval + n_cal]),
        "evaluation": np.sort(shuffled[:n_eval]),
        "background_short": short,
    }


def rows_of(labels: np.ndarray, identities: np.ndarray) -> np.ndarray:
    """Row indices (in set order) of the captures of ``identities``."""
    return np.flatnonzero(np.isin(np.asarray(labels).astype(str), identities))


# --- recipes ---------------------------------------------------------------------------------


def _build_lfw_facenet_keras(source: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The committed arrays ``models/lfw_embeddings.npy`` and ``models/lfw_labels.npy``."""
    X = np.load(source / "models" / "lfw_embeddings.npy", allow_pickle=False)
    labels = np.load(source / "models" / "lfw_labels.npy", allow_pickle=False)
    record = {
        "source_files": ["models/lfw_embeddings.npy", "models/lfw_labels.npy"],
        "notes": (
            "Each row is the output of keras-facenet's FaceNet (Inception-ResNet-v1, 512-D) on one "
            "LFW deep-funneled image resized from 250x250 to 160x160 with pixels scaled to [0, 1], no "
            "face detection or crop (the repository's generate_embeddings.py); the committed subset covers "
            "1,435 of LFW's 13,233 images. Rows are unit-norm as committed."
        ),
    }
    return X, labels, record


#: LFW deep-funneled images are 250 x 250 with the labelled face centred; when the HOG detector
#: finds no face this central box (LFW's own crop region for its "funneled" alignment) is used.
LFW_CENTRE_BOX = (68, 68, 182, 182)


#: How :func:`dlib_face_descriptors` turns an LFW image into a descriptor (recorded in the provenance).
DLIB_PIPELINE = (
    "dlib 20 HOG detector (1 upsampling, detection nearest the centre, else the central box "
    f"{LFW_CENTRE_BOX}); 5-point landmarks; 150x150 chip, padding 0.25; ResNet descriptor, no jitter"
)


def _lfw_selection(source: Path, min_per_identity: int, max_per_identity: int | None) -> list[Path]:
    """Images of identities with ``min_per_identity`` images or more: the first ``max_per_identity`` each (by name)."""
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a directory of per-person LFW folders")
    chosen: list[Path] = []
    for person in sorted(p for p in source.iterdir() if p.is_dir()):
        images = sorted(person.glob("*.jpg"))
        if len(images) >= min_per_identity:
            chosen.extend(images[:max_per_identity])
    if not chosen:
        raise FileNotFoundError(f"{source} holds no identity with {min_per_identity} or more .jpg images")
    return chosen


def _dlib_models() -> tuple[Any, Any, Any]:
    """dlib's HOG face detector, 5-point landmark model and ResNet face descriptor (from face_recognition_models)."""
    import importlib.util

    import dlib  # the dlib-bin or dlib package

    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pip install face_recognition_models==0.3.0 dlib-bin (the models ship in the wheel)")
    models = Path(next(iter(spec.submodule_search_locations))) / "models"
    return (
        dlib.get_frontal_face_detector(),
        dlib.shape_predictor(str(models / "shape_predictor_5_face_landmarks.dat")),
        dlib.face_recognition_model_v1(str(models / "dlib_face_recognition_resnet_model_v1.dat")),
    )


def dlib_face_descriptors(paths: list[Path], batch: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """128-D dlib ResNet descriptors of one face per image, and whether the detector found it.

    The face_recognition pipeline: HOG detector (one upsampling); of several detections the one
    nearest the image centre; 5-point landmarks; a 150 x 150 aligned chip (padding 0.25); the
    descriptor without jitter. An image where the detector finds nothing uses
    :data:`LFW_CENTRE_BOX` (the flag records it).
    """
    import dlib
    from PIL import Image

    detector, landmarks, descriptor = _dlib_models()
    rows: list[np.ndarray] = []
    detected = np.zeros(len(paths), dtype=bool)
    chips: list[np.ndarray] = []
    for i, path in enumerate(paths):
        image = np.asarray(Image.open(path).convert("RGB"))
        centre = np.array(image.shape[1::-1]) / 2.0
        found = list(detector(image, 1))
        detected[i] = bool(found)
        if found:
            box = min(found, key=lambda r: float(np.hypot(*(np.array([r.center().x, r.center().y]) - centre))))
        else:
            box = dlib.rectangle(*LFW_CENTRE_BOX)
        chips.append(dlib.get_face_chip(image, landmarks(image, box), size=150, padding=0.25))
        if len(chips) == batch or i == len(paths) - 1:
            rows.extend(np.asarray(v, dtype=np.float32) for v in descriptor.compute_face_descriptor(chips))
            chips = []
            print(f"  {i + 1}/{len(paths)} images", file=sys.stderr, flush=True)
    return np.stack(rows), detected


def _build_lfw_dlib(source: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """dlib descriptors of the LFW people with 4+ images, their first 10 images each (3,989 images)."""
    paths = _lfw_selection(source, min_per_identity=4, max_per_identity=10)
    X, detected = dlib_face_descriptors(paths)
    labels = np.array([p.parent.name for p in paths])
    record = {
        "selection": "LFW identities with >= 4 images; the first 10 images (by file name) of each",
        "pipeline": DLIB_PIPELINE,
        "detector_missed": int((~detected).sum()),
        "captures_files": [f"{p.parent.name}/{p.name}" for p in paths],
    }
    return X, labels, record


def _build_lfw_dlib_all(source: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """dlib descriptors of every LFW image (13,233), reusing the rows of a cached ``lfw-dlib`` (same pipeline)."""
    paths = _lfw_selection(source, min_per_identity=1, max_per_identity=None)
    names = [f"{p.parent.name}/{p.name}" for p in paths]
    known: dict[str, np.ndarray] = {}
    reused_missed = 0
    if "lfw-dlib" in available():
        X_known, _ = load("lfw-dlib")
        meta = provenance("lfw-dlib")
        known = dict(zip(meta["captures_files"], X_known, strict=True))
        reused_missed = int(meta["detector_missed"])
    todo = [p for p, n in zip(paths, names, strict=True) if n not in known]
    X_new, detected = dlib_face_descriptors(todo) if todo else (np.zeros((0, 128), np.float32), np.zeros(0, bool))
    fresh = dict(zip((f"{p.parent.name}/{p.name}" for p in todo), X_new, strict=True))
    X = np.stack([known[n] if n in known else fresh[n] for n in names])
    record = {
        "selection": "every LFW image",
        "pipeline": DLIB_PIPELINE,
        "detector_missed": reused_missed + int((~detected).sum()),
        "reused_from_lfw_dlib": len(paths) - len(todo),
        "captures_files": names,
    }
    return X, np.array([p.parent.name for p in paths]), record


#: Equal parts each LibriSpeech utterance is cut into for the segment set (after silence trimming).
SEGMENTS_PER_UTTERANCE = 4


def _librispeech_files(source: Path) -> list[Path]:
    """Every ``<speaker>-<chapter>-<utterance>.flac`` under ``source`` (LibriSpeech naming), sorted by name."""
    files = sorted(source.rglob("*.flac"), key=lambda p: p.name)
    named = [p for p in files if len(p.stem.split("-")) == 3 and all(part.isdigit() for part in p.stem.split("-"))]
    if not named:
        raise FileNotFoundError(
            f"{source} holds no LibriSpeech-named .flac file (<speaker>-<chapter>-<utterance>.flac)"
        )
    return named


def ge2e_embeddings(waves: list[np.ndarray]) -> np.ndarray:
    """256-D GE2E d-vectors (Resemblyzer's ``VoiceEncoder.embed_utterance``) of preprocessed 16 kHz waveforms."""
    from resemblyzer import VoiceEncoder

    encoder = VoiceEncoder(device="cpu", verbose=False)
    rows = []
    for i, wave in enumerate(waves):
        rows.append(np.asarray(encoder.embed_utterance(wave), dtype=np.float32))
        if (i + 1) % 100 == 0 or i + 1 == len(waves):
            print(f"  {i + 1}/{len(waves)} waveforms", file=sys.stderr, flush=True)
    return np.stack(rows)


def _preprocessed(path: Path) -> np.ndarray:
    """Resemblyzer's preprocessing of one file: 16 kHz, volume normalised, long silences trimmed (webrtcvad)."""
    from resemblyzer import preprocess_wav

    return np.asarray(preprocess_wav(path), dtype=np.float32)


def _librispeech_captures(files: list[Path]) -> list[tuple[str, Path, int]]:
    """``(speaker, file, part)`` per capture: whole utterances, or 4 parts of each utterance of a sparse speaker.

    A speaker with at least :data:`MIN_CAPTURES` utterances gets one capture per utterance
    (``part`` 0); a speaker with fewer gets :data:`SEGMENTS_PER_UTTERANCE` captures per utterance,
    its consecutive equal parts (``part`` 1, 2, ...).
    """
    by_speaker: dict[str, list[Path]] = collections.defaultdict(list)
    for path in files:
        by_speaker[path.stem.split("-")[0]].append(path)
    captures = []
    for speaker, paths in by_speaker.items():
        parts = [0] if len(paths) >= MIN_CAPTURES else list(range(1, SEGMENTS_PER_UTTERANCE + 1))
        captures.extend((speaker, path, part) for path in paths for part in parts)
    return captures


def _build_librispeech_ge2e(source: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """GE2E d-vectors of LibriSpeech utterances (parts of utterances for speakers with fewer than 4)."""
    captures = _librispeech_captures(_librispeech_files(source))
    waves, cache = [], {}
    for _, path, part in captures:
        if path not in cache:
            cache = {path: _preprocessed(path)}
        wave = cache[path]
        if part:
            bounds = np.linspace(0, wave.size, SEGMENTS_PER_UTTERANCE + 1).astype(int)
            wave = wave[bounds[part - 1] : bounds[part]]
        waves.append(wave)
    X = ge2e_embeddings(waves)
    segmented = sorted({speaker for speaker, _, part in captures if part})
    record = {
        "pipeline": (
            "resemblyzer.preprocess_wav (16 kHz, -30 dBFS volume normalisation, webrtcvad long-silence trimming); "
            "VoiceEncoder.embed_utterance (1.6 s partials, averaged, L2-normalised) of each whole utterance, or, for "
            f"a speaker with fewer than {MIN_CAPTURES} utterances, of each of the {SEGMENTS_PER_UTTERANCE} equal "
            "consecutive parts of every trimmed utterance"
        ),
        "speakers_with_whole_utterances": len({s for s, _, part in captures if not part}),
        "speakers_with_segments": len(segmented),
        "segments_note": (
            "the parts of one utterance come from one recording session: genuine scores between them are "
            "optimistic against captures taken on different days"
        ),
        "captures_files": [f"{path.stem}#{part}" if part else path.stem for _, path, part in captures],
    }
    return X, np.array([speaker for speaker, _, _ in captures]), record


#: The face model of the LFW dlib sets.
DLIB_MODEL = (
    "dlib ResNet face descriptor (dlib_face_recognition_resnet_model_v1 from the "
    "face_recognition_models 0.3.0 wheel), 128-D"
)
#: Where the LFW images come from.
LFW_SOURCE = (
    "LFW deep-funneled images (Huang et al. 2007; Huang, Mattar, Lee & Learned-Miller 2012), e.g. the copy "
    "committed in GitHub repository braun-steven/dfi-tensorflow at commit "
    "0a86d9a0c4e0c208f03766075a0fbaead1374e3e, folder data/lfw-deepfunneled (13,233 images, 5,749 people)"
)
#: The licence statement of the LFW dlib sets.
LFW_DLIB_LICENCE = (
    "LFW images: no licence stated (news photographs collected for research) - cache only, never commit; "
    "dlib model: CC0 (public domain), face_recognition_models package: MIT"
)

#: The licence statement of the LibriSpeech sets.
LIBRISPEECH_LICENCE = (
    "LibriSpeech audio: CC BY 4.0; Resemblyzer code and model: Apache-2.0. Cache only (derived from "
    "recordings of people)."
)
#: The speaker model of the LibriSpeech sets.
GE2E_MODEL = (
    "GE2E speaker encoder (Wan et al. 2018) as shipped in the resemblyzer 0.1.4 wheel (pretrained.pt, trained by "
    "the Real-Time-Voice-Cloning encoder recipe: LibriSpeech train-other-500, VoxCeleb1, VoxCeleb2 dev), 256-D"
)

SETS: dict[str, EmbeddingSet] = {
    s.name: s
    for s in (
        EmbeddingSet(
            name="lfw-facenet-keras",
            modality="face",
            model="FaceNet (keras-facenet, Inception-ResNet-v1), 512-D",
            source="GitHub repository manarb881/final-PROJECT-ML, commit 6dfdc7c5256f1c4dfdc9c3baa6c5a15e96e30d39",
            licence=(
                "none stated: the repository has no licence file, so no right to redistribute is granted; "
                "LFW images carry no licence (research benchmark). Cache only, never commit."
            ),
            recipe=(
                "Rebuild: clone the public GitHub repository manarb881/final-PROJECT-ML, check out commit "
                "6dfdc7c5256f1c4dfdc9c3baa6c5a15e96e30d39, then run "
                "`python benchmarks/deep_embeddings.py build lfw-facenet-keras --source <checkout>`."
            ),
            build=_build_lfw_facenet_keras,
        ),
        EmbeddingSet(
            name="lfw-dlib",
            modality="face",
            model=DLIB_MODEL,
            source=LFW_SOURCE,
            licence=LFW_DLIB_LICENCE,
            recipe=(
                "Rebuild: pip install dlib-bin==20.0.1.post1 face_recognition_models==0.3.0 pillow; get the LFW "
                "deep-funneled folder (one sub-folder per person: the LFW archive lfw-deepfunneled.tgz, or the copy in "
                "GitHub repository braun-steven/dfi-tensorflow, commit 0a86d9a0c4e0c208f03766075a0fbaead1374e3e, "
                "data/lfw-deepfunneled), then run `python benchmarks/deep_embeddings.py build lfw-dlib --source "
                "<lfw-deepfunneled>` (about 0.25 s per image on one core: ~20 min)."
            ),
            build=_build_lfw_dlib,
        ),
        EmbeddingSet(
            name="lfw-dlib-all",
            modality="face",
            model=DLIB_MODEL,
            source=LFW_SOURCE + "; every image, for attacks that need many embeddings of other people",
            licence=LFW_DLIB_LICENCE,
            recipe=(
                "Rebuild: as lfw-dlib, with `build lfw-dlib-all --source <lfw-deepfunneled>` (reuses a cached "
                "lfw-dlib; the other 9,244 images take about 40 min on one core)."
            ),
            build=_build_lfw_dlib_all,
        ),
        EmbeddingSet(
            name="librispeech-ge2e",
            modality="voice",
            model=GE2E_MODEL,
            source=(
                "LibriSpeech (Panayotov et al. 2015) utterances: the copy committed in GitHub repository "
                "resemble-ai/Resemblyzer, commit 15d828edebe06bc72b9cabc8ef8ca5ab2cb457ce, folder audio_data "
                "(10 test-other speakers x 10 utterances; 251 train-clean-100 speakers x 1 utterance, each cut "
                "into 4 parts); any LibriSpeech folder works (dev-clean, test-clean, test-other: speakers the "
                "encoder never saw, all with enough utterances)"
            ),
            licence=LIBRISPEECH_LICENCE,
            recipe=(
                "Rebuild: in a separate virtualenv (it keeps librosa's numba away from the project's) pip install "
                "torch==2.13.0 (the CPU build is enough), then resemblyzer==0.1.4 --no-deps (its webrtcvad needs a C "
                "build) and librosa soundfile webrtcvad-wheels (the same module, prebuilt); check out GitHub "
                "repository resemble-ai/Resemblyzer at "
                "commit 15d828edebe06bc72b9cabc8ef8ca5ab2cb457ce (or take any LibriSpeech folder), then run "
                "`python benchmarks/deep_embeddings.py build librispeech-ge2e --source <checkout>/audio_data` "
                "(about 35 s of CPU for the 1,104 captures of that folder)."
            ),
            build=_build_librispeech_ge2e,
        ),
    )
}


# --- command line ----------------------------------------------------------------------------


def _describe(name: str, directory: Path | None) -> dict[str, Any]:
    spec = SETS[name]
    row: dict[str, Any] = {
        "name": name,
        "modality": spec.modality,
        "model": spec.model,
        "source": spec.source,
        "licence": spec.licence,
        "cached": name in available(directory),
    }
    if row["cached"]:
        meta = provenance(name, directory)
        row.update({k: meta[k] for k in ("dims", "identities", "captures", "identities_ge4") if k in meta})
    return row


def build(name: str, source: Path, directory: Path | None = None) -> tuple[Path, Path]:
    """Run a set's recipe on ``source`` and write it to the cache."""
    spec = SETS[name]
    X, labels, record = spec.build(source)
    record = {
        "modality": spec.modality,
        "model": spec.model,
        "source": spec.source,
        "licence": spec.licence,
        "recipe": spec.recipe,
        **record,
    }
    return save(name, X, labels, record, directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help=f"cache directory (default: ${CACHE_ENV} or ~/.cache)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="known sets, and which are cached")
    info = sub.add_parser("info", help="a cached set's provenance")
    info.add_argument("name", choices=sorted(SETS))
    make = sub.add_parser("build", help="rebuild a set's cache files from its public source")
    make.add_argument("name", choices=sorted(SETS))
    make.add_argument("--source", type=Path, required=True, help="directory holding the set's public source")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name in SETS:
            print(json.dumps(_describe(name, args.cache)))
    elif args.command == "info":
        print(json.dumps(provenance(args.name, args.cache), indent=2))
    else:
        for path in build(args.name, args.source, args.cache):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
