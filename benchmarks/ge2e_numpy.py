"""The ``librispeech-ge2e`` set without torch: Resemblyzer 0.1.4's weights run by a numpy LSTM.

Where torch cannot be installed (this project's machines: PyPI's torch wheels pull several GB of
CUDA libraries), :mod:`benchmarks.deep_embeddings`' GE2E recipe is rebuilt from the resemblyzer
wheel alone: ``pretrained.pt`` is read in torch's legacy pickle format (magic number, protocol,
system info, the state dict whose tensors name storages by persistent id, the storage keys, then
each storage's raw little-endian data), and ``VoiceEncoder.embed_utterance`` — 1.6 s partials at
1.3 per second, a 3-layer LSTM (40 → 256), a linear layer, ReLU, L2 norm, the partials averaged and
normalised — runs in float32 numpy. Audio preprocessing is the wheel's own ``resemblyzer/audio.py``
(librosa at 16 kHz, −30 dBFS, webrtcvad trimming), loaded without its package ``__init__`` (which
imports torch). Check: two utterances of one LibriSpeech speaker score cosine 0.94–0.96, of two
speakers 0.61–0.72.

Run (a separate virtualenv: ``pip install librosa soundfile webrtcvad-wheels``; ``pip download
--no-deps resemblyzer==0.1.4`` and unzip the wheel)::

    SKETCHAUTH_EMBEDDINGS_DIR=... python benchmarks/ge2e_numpy.py WHEEL/resemblyzer CHECKOUT/audio_data
"""

from __future__ import annotations

import pickle
import struct
import sys
import types
from collections import OrderedDict
from pathlib import Path

import numpy as np


def _audio_module(RZ: Path) -> types.ModuleType:
    pkg = types.ModuleType("resemblyzer")
    pkg.__path__ = [str(RZ)]
    sys.modules["resemblyzer"] = pkg
    hp = types.ModuleType("resemblyzer.hparams")
    exec(compile((RZ / "hparams.py").read_text(), str(RZ / "hparams.py"), "exec"), hp.__dict__)
    sys.modules["resemblyzer.hparams"] = hp
    source = (
        (RZ / "audio.py")
        .read_text()
        .replace("from scipy.ndimage.morphology import binary_dilation", "from scipy.ndimage import binary_dilation")
    )
    module = types.ModuleType("resemblyzer.audio")
    exec(compile(source, str(RZ / "audio.py"), "exec"), module.__dict__)
    sys.modules["resemblyzer.audio"] = module
    return module


class _Storage:
    def __init__(self, kind: str, key: str, size: int) -> None:
        self.kind, self.key, self.size = kind, key, size
        self.data: np.ndarray | None = None


class _Lazy:
    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.shape, self.stride = storage, offset, size, stride

    def array(self) -> np.ndarray:
        base = self.storage.data
        if base is None:
            raise ValueError(f"storage {self.storage.key} was not in the file")
        item = base.itemsize
        return np.lib.stride_tricks.as_strided(
            base[self.offset :], shape=self.shape, strides=tuple(s * item for s in self.stride)
        ).copy()


def _rebuild(storage, offset, size, stride, *rest):
    return _Lazy(storage, offset, tuple(size), tuple(stride))


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name.startswith("_rebuild_tensor"):
            return _rebuild
        if module == "torch" and name.endswith("Storage"):
            return name
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        _, kind, key, _location, size, _view = pid
        if key not in self.storages:
            self.storages[key] = _Storage(kind, key, size)
        return self.storages[key]


DTYPES = {"FloatStorage": np.float32, "LongStorage": np.int64, "IntStorage": np.int32, "DoubleStorage": np.float64}


def load_state(path: Path) -> dict[str, np.ndarray]:
    storages: dict[str, _Storage] = {}
    with open(path, "rb") as f:
        pickle.load(f)  # magic number
        pickle.load(f)  # protocol version
        pickle.load(f)  # sys info
        result = _Unpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            (size,) = struct.unpack("<q", f.read(8))
            st = storages[key]
            dtype = np.dtype(DTYPES[st.kind]).newbyteorder("<")
            st.data = np.frombuffer(f.read(size * dtype.itemsize), dtype=dtype)
    state = result["model_state"]
    return {k: v.array() for k, v in state.items() if isinstance(v, _Lazy)}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def forward(state: dict[str, np.ndarray], mels: np.ndarray) -> np.ndarray:
    """``mels``: batch × frames × 40 float32 → L2-normalised embeddings (batch × 256)."""
    x = mels.astype(np.float32)
    for layer in range(3):
        w_ih, w_hh = state[f"lstm.weight_ih_l{layer}"], state[f"lstm.weight_hh_l{layer}"]
        bias = state[f"lstm.bias_ih_l{layer}"] + state[f"lstm.bias_hh_l{layer}"]
        batch, frames, _ = x.shape
        hidden = w_hh.shape[1]
        h = np.zeros((batch, hidden), np.float32)
        c = np.zeros((batch, hidden), np.float32)
        pre = x @ w_ih.T + bias
        out = np.empty((batch, frames, hidden), np.float32)
        for t in range(frames):
            g = pre[:, t] + h @ w_hh.T
            i, f, gg, o = np.split(g, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
            h = _sigmoid(o) * np.tanh(c)
            out[:, t] = h
        x = out
    raw = np.maximum(h @ state["linear.weight"].T + state["linear.bias"], 0.0)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def partial_slices(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> tuple[list, list]:
    """VoiceEncoder.compute_partial_slices (16 kHz, 10 ms frames, 160-frame partials)."""
    samples_per_frame = 160
    n_frames = int(np.ceil((n_samples + 1) / samples_per_frame))
    frame_step = int(np.round((16000 / rate) / samples_per_frame))
    wav_slices, mel_slices = [], []
    steps = max(1, n_frames - 160 + frame_step + 1)
    for i in range(0, steps, frame_step):
        mel_range = np.array([i, i + 160])
        mel_slices.append(slice(*mel_range))
        wav_slices.append(slice(*(mel_range * samples_per_frame)))
    last = wav_slices[-1]
    coverage = (n_samples - last.start) / (last.stop - last.start)
    if coverage < min_coverage and len(mel_slices) > 1:
        mel_slices, wav_slices = mel_slices[:-1], wav_slices[:-1]
    return wav_slices, mel_slices


def embed_utterance(state: dict[str, np.ndarray], audio: types.ModuleType, wav: np.ndarray) -> np.ndarray:
    wav_slices, mel_slices = partial_slices(len(wav))
    stop = wav_slices[-1].stop
    if stop >= len(wav):
        wav = np.pad(wav, (0, stop - len(wav)), "constant")
    mel = audio.wav_to_mel_spectrogram(wav)
    mels = np.array([mel[s] for s in mel_slices])
    partial = forward(state, mels)
    raw = partial.mean(axis=0)
    return (raw / np.linalg.norm(raw)).astype(np.float32)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import benchmarks.deep_embeddings as de

    wheel, source = Path(sys.argv[1]), Path(sys.argv[2])
    audio = _audio_module(wheel)
    state = load_state(wheel / "pretrained.pt")
    captures = de._librispeech_captures(de._librispeech_files(source))
    rows, cache = [], {}
    for n, (_, path, part) in enumerate(captures):
        if path not in cache:
            cache = {path: np.asarray(audio.preprocess_wav(path), dtype=np.float32)}
        wave = cache[path]
        if part:
            bounds = np.linspace(0, wave.size, de.SEGMENTS_PER_UTTERANCE + 1).astype(int)
            wave = wave[bounds[part - 1] : bounds[part]]
        rows.append(embed_utterance(state, audio, wave))
        if (n + 1) % 100 == 0:
            print(f"  {n + 1}/{len(captures)}", file=sys.stderr, flush=True)
    X = np.stack(rows)
    spec = de.SETS["librispeech-ge2e"]
    record = {
        "modality": spec.modality,
        "model": spec.model,
        "source": spec.source,
        "licence": spec.licence,
        "recipe": spec.recipe,
        "pipeline": (
            "resemblyzer.audio.preprocess_wav (the 0.1.4 wheel's own module: librosa load at 16 kHz, -30 dBFS, "
            "webrtcvad trimming); VoiceEncoder.embed_utterance's slicing and forward pass re-implemented in float32 "
            "numpy from the wheel's pretrained.pt (torch is not installable here): 3-layer LSTM, linear, ReLU, L2; "
            "partials averaged and L2-normalised"
        ),
        "captures_files": [f"{p.stem}#{part}" if part else p.stem for _, p, part in captures],
    }
    labels = np.array([speaker for speaker, _, _ in captures])
    print(de.save("librispeech-ge2e", X, labels, record))


if __name__ == "__main__":
    main()
