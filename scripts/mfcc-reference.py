#!/usr/bin/env python3
"""Independent numpy reference for ntprof's mfcc inlay (src/inlay/mfcc.c).

Run once with Debian's interpreter, which has numpy:

    /usr/bin/python3 scripts/mfcc-reference.py

It prints C initialisers that tests/test_mfcc.c holds as constants. The
pipeline follows python_speech_features.mfcc() as DeepSpeech called it,
written out here from its formulas (no code shared with the C side):

  pre-emphasis 0.97 -> frames (window, hop) -> Hamming window (numpy.hamming,
  the one deliberate difference from python_speech_features' rectangular
  default) -> |rfft(frame, nfft)|^2 / nfft -> mel filterbank (triangles on
  bins floor((nfft+1) * mel2hz(points) / samplerate)) -> log of energies
  floored at 1e-10 -> orthonormal DCT-II, keep `numcep` -> cepstral lifter
  L=22 -> coefficient 0 replaced by log frame energy.

Everything is computed in float64; the signal is rounded to float32 first so
that the C test feeds exactly the same samples.
"""
import numpy as np

FLOOR = 1e-10


def hz2mel(hz):
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def mel2hz(mel):
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def filterbank(nfilt, nfft, samplerate):
    lowmel, highmel = hz2mel(0.0), hz2mel(samplerate / 2.0)
    melpoints = np.linspace(lowmel, highmel, nfilt + 2)
    bins = np.floor((nfft + 1) * mel2hz(melpoints) / samplerate)
    fb = np.zeros((nfilt, nfft // 2 + 1))
    for j in range(nfilt):
        for i in range(int(bins[j]), int(bins[j + 1])):
            fb[j, i] = (i - bins[j]) / (bins[j + 1] - bins[j])
        for i in range(int(bins[j + 1]), int(bins[j + 2])):
            fb[j, i] = (bins[j + 2] - i) / (bins[j + 2] - bins[j + 1])
    return fb


def dct2_ortho(x):
    """Orthonormal DCT-II along the last axis (scipy's norm='ortho')."""
    n = x.shape[-1]
    k = np.arange(n)[:, None]
    m = np.arange(n)[None, :]
    basis = np.cos(np.pi * k * (2 * m + 1) / (2 * n)) * np.sqrt(2.0 / n)
    basis[0, :] = np.sqrt(1.0 / n)
    return x @ basis.T


def mfcc(signal, samplerate, window, hop, nfft, nfilt, numcep, ceplifter=22):
    sig = np.asarray(signal, dtype=np.float64)
    emph = np.append(sig[0], sig[1:] - 0.97 * sig[:-1])
    frames = 1 + (len(sig) - window) // hop
    idx = np.arange(frames)[:, None] * hop + np.arange(window)[None, :]
    framed = emph[idx] * np.hamming(window)[None, :]
    pspec = np.abs(np.fft.rfft(framed, nfft)) ** 2 / nfft
    energy = np.maximum(pspec.sum(axis=1), FLOOR)
    feat = np.maximum(pspec @ filterbank(nfilt, nfft, samplerate).T, FLOOR)
    cep = dct2_ortho(np.log(feat))[:, :numcep]
    lift = 1.0 + (ceplifter / 2.0) * np.sin(np.pi * np.arange(numcep) / ceplifter)
    cep = cep * lift[None, :]
    cep[:, 0] = np.log(energy)
    return cep


def tone(samplerate, n):
    """440 Hz + 1000 Hz plus a click every 101 samples.

    The clicks give every mel band real energy: with pure tones most bands
    would only hold spectral leakage near float32 round-off, and the test
    would compare rounding noise instead of the pipeline."""
    i = np.arange(n)
    t = i / samplerate
    x = 0.5 * np.sin(2 * np.pi * 440.0 * t) + 0.25 * np.sin(2 * np.pi * 1000.0 * t)
    x = x + np.where(i % 101 == 0, 0.3, 0.0)
    # The C test computes the same expression in double and rounds to float.
    return x.astype(np.float32)


def emit(name, cep, rows):
    print(f"/* {name}: frames {rows}, {cep.shape[1]} coefficients each */")
    print(f"static const double {name}[{len(rows)}][{cep.shape[1]}] = {{")
    for r in rows:
        vals = ", ".join(f"{v:.8g}" for v in cep[r])
        print(f"    {{ {vals} }},")
    print("};")


def main():
    # DeepSpeech's configuration: 16 kHz, 25 ms / 10 ms, 512-point FFT,
    # 26 bands, 26 coefficients; 0.1 s of tone gives 8 frames.
    cep = mfcc(tone(16000, 1600), 16000, 400, 160, 512, 26, 26)
    print(f"/* config A: T = {cep.shape[0]} */")
    emit("ref_a", cep, [0, 3, 7])
    # A second, different configuration: 8 kHz, 200 / 80 samples,
    # 256-point FFT, 20 bands, 13 coefficients; 0.1 s gives 8 frames.
    cep = mfcc(tone(8000, 800), 8000, 200, 80, 256, 20, 13)
    print(f"/* config B: T = {cep.shape[0]} */")
    emit("ref_b", cep, [0, 4, 7])


if __name__ == "__main__":
    main()
