"""A private text representation done right: encode, clip on a grid, add exact noise, report the true epsilon.

The pipeline of the chapter "DPText done right", one document at a time (local DP: the dataset is one
document, and two *neighbouring* datasets are any two documents, "replace one"):
:func:`build_vocabulary` (from a training split) and :func:`bag_of_words` (counts normalised to l1 or l2
norm 1); :func:`clip_to_grid` (clip to norm ``C`` and round towards zero onto the grid of step ``C / steps``,
giving integers ``k`` with ``||k|| <= steps``, checked in integers); :func:`calibrate` (the sensitivity of
:func:`sensitivity`, DP-Rewrite's table, and the noise scale); :class:`TextRelease` (releases
``(C / steps) (k + Z)`` with the book's exact samplers and reports the epsilon its noise really gives).

Sensitivities, for clipped vectors ``u``, ``u'`` of norm at most ``C``: an l1 clip with Laplace noise,
``||u - u'||_1 <= 2C``; an l2 clip with Laplace noise, ``||u - u'||_1 <= sqrt(d) ||u - u'||_2 <= 2C sqrt(d)``
(Cauchy-Schwarz; equality at ``u = -u'`` with equal coordinates); an l2 clip with Gaussian noise,
``||u - u'||_2 <= 2C``.  On the grid: ``2 steps``, ``floor(2 steps sqrt(d))``, ``2 steps``.  Discrete
Laplace noise of scale ``t`` per coordinate has a privacy loss of at most ``||k - k'||_1 / t``, so
``t = Delta_1 / epsilon`` is exactly epsilon-DP.  The multivariate discrete Gaussian of scale ``sigma`` is
``rho``-zCDP with ``rho = Delta_2^2 / (2 sigma^2)`` (Canonne, Kamath and Steinke 2020, with Renyi divergences
adding over independent coordinates), hence ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP
(:func:`dptutor.renyi.zcdp_to_dp`): a bound, not the exact curve.

Broken releases for the audits: :class:`DPTextRelease` (the l1 pipeline with DPText's sampler, its NaN
draws becoming zero noise as in the authors' code) and :func:`wrong_sensitivity_release` (an l2 clip with
Laplace noise calibrated to a claimed sensitivity below ``2C sqrt(d)``).  :func:`generated_corpus` is
*generated* data (two made-up topics, a seeded generator), not real text.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import (check_choice, check_float_array, check_int, check_positive, check_probability,
                                check_real, check_rng, check_sequence, check_size, check_str, MAX_ELEMENTS)
from dptutor.dptext import sample_dptext
from dptutor.exact import check_scale, check_sigma, sample_discrete_gaussian, sample_discrete_laplace
from dptutor.renyi import round_up, zcdp_to_dp

__all__ = [
    "TOPIC_WORDS", "SHARED_WORDS", "NORMS", "NOISES", "generated_corpus", "build_vocabulary", "bag_of_words",
    "clip_to_grid", "sensitivity", "grid_sensitivity", "TextRelease", "calibrate",
    "wrong_sensitivity_release", "DPTextRelease", "adversarial_pair", "nearest_centroid_accuracy",
]

#: The two made-up topics of the generated corpus, each with its own words (a few words in both).
TOPIC_WORDS: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("oven", "flour", "butter", "salt", "bake", "sugar", "knife", "pan", "soup", "bread", "garlic",
     "onion", "simmer", "recipe", "taste", "dinner", "heat", "light"),
    ("star", "orbit", "planet", "comet", "moon", "telescope", "galaxy", "dust", "night", "light",
     "sky", "crater", "eclipse", "rocket", "heat", "signal", "mass", "dinner"),
)

#: Words that either topic uses equally often (they carry no signal about the topic).
SHARED_WORDS: tuple[str, ...] = ("the", "a", "and", "of", "we", "saw", "made", "after", "it", "was",
                                 "very", "long", "small", "then", "with", "old")

#: The clipping norms and the noise families.
NORMS: tuple[str, ...] = ("l1", "l2")
NOISES: tuple[str, ...] = ("laplace", "gaussian")


def generated_corpus(n_documents: int, *, words: int = 12, topic_share: float = 0.4,
                     seed: int = 0) -> tuple[list[str], NDArray[np.int64]]:
    """A *generated* corpus: ``n_documents`` documents, each from one of two made-up topics.

    Each document draws its topic (0 or 1) with probability 1/2, then ``words`` words, each from its
    topic's list (:data:`TOPIC_WORDS`) with probability ``topic_share`` and from :data:`SHARED_WORDS`
    otherwise, uniformly within the list.  It is not real text: it exists so that the chapter runs offline.

    Parameters
    ----------
    n_documents : int
        Number of documents, ``>= 1``.
    words : int, optional
        Words per document, ``>= 1`` (default 12).
    topic_share : float, optional
        Probability that a word comes from the topic's own list, in [0, 1] (default 0.4).
    seed : int, optional
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    documents : list of str
        The documents, words separated by single spaces.
    labels : numpy.ndarray of int64
        The topic of each document.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    n = check_int(n_documents, "n_documents", minimum=1, maximum=10**6)
    length = check_int(words, "words", minimum=1, maximum=min(10**4, 2 * 10**7 // n))  # n_documents * words <= 2 * 10**7
    share = check_probability(topic_share, "topic_share", closed=True)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    labels = rng.integers(0, 2, size=n)
    from_topic = rng.random((n, length)) < share
    topic_pick = rng.integers(0, len(TOPIC_WORDS[0]), size=(n, length))
    shared_pick = rng.integers(0, len(SHARED_WORDS), size=(n, length))
    documents = [" ".join(TOPIC_WORDS[labels[i]][topic_pick[i, j]] if from_topic[i, j] else SHARED_WORDS[shared_pick[i, j]]
                          for j in range(length)) for i in range(n)]
    return documents, labels.astype(np.int64)


def _tokens(document: object, name: str) -> list[str]:
    """The lower-cased, whitespace-separated words of one document."""
    return check_str(document, name).lower().split()


def build_vocabulary(documents: object, *, size: int | None = None) -> tuple[str, ...]:
    """The vocabulary of a training split: its words, most frequent first (ties alphabetical).

    Parameters
    ----------
    documents : sequence of str
        The training documents (at least one).
    size : int, optional
        Keep only the ``size`` most frequent words (default: all).

    Returns
    -------
    tuple of str

    Raises
    ------
    TypeError, ValueError
        For a bad ``documents`` or ``size``.

    Examples
    --------
    >>> build_vocabulary(["b a", "a c"])
    ('a', 'b', 'c')
    """
    docs = check_sequence(documents, "documents")
    counts = Counter(w for i, d in enumerate(docs) for w in _tokens(d, f"documents[{i}]"))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    if size is not None:
        ranked = ranked[: check_int(size, "size", minimum=1)]
    if not ranked:
        raise ValueError("documents must contain at least one word")
    return tuple(ranked)


def bag_of_words(documents: object, vocabulary: object, *, norm: str = "l1") -> NDArray[np.float64]:
    """Word counts over ``vocabulary``, each row normalised to ``norm`` 1 (an empty row stays 0).

    Words outside the vocabulary are dropped (the vocabulary comes from the training split only, so a
    test document's new words tell the encoder nothing).

    Parameters
    ----------
    documents : sequence of str
    vocabulary : sequence of str
        Distinct words (:func:`build_vocabulary`).
    norm : {"l1", "l2"}, optional

    Returns
    -------
    numpy.ndarray of float64, shape (len(documents), len(vocabulary))

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).

    Examples
    --------
    >>> bag_of_words(["a a b"], ("a", "b"), norm="l1").tolist()
    [[0.6666666666666666, 0.3333333333333333]]
    """
    docs = check_sequence(documents, "documents")
    vocab = [check_str(w, "vocabulary", allow_empty=False) for w in check_sequence(vocabulary, "vocabulary")]
    if len(set(vocab)) != len(vocab) or any(w.lower().split() != [w] for w in vocab):  # else no token can match it
        raise ValueError("vocabulary must not repeat a word, and each must be one lower-case word without spaces")
    check_choice(norm, "norm", NORMS)
    index = {w: j for j, w in enumerate(vocab)}
    counts = np.zeros(check_size((len(docs), len(vocab)), "len(documents) * len(vocabulary)"))
    for i, d in enumerate(docs):
        for w in _tokens(d, f"documents[{i}]"):
            if w in index:
                counts[i, index[w]] += 1.0
    sizes = counts.sum(axis=1) if norm == "l1" else np.sqrt((counts**2).sum(axis=1))
    return counts / np.where(sizes > 0, sizes, 1.0)[:, None]


def _grid_norm(k: NDArray[np.int64], norm: str) -> NDArray[np.int64]:
    """The exact l1 norm, or the exact *squared* l2 norm, of each integer row."""
    return np.abs(k).sum(axis=1) if norm == "l1" else (k * k).sum(axis=1)


def clip_to_grid(vectors: ArrayLike, *, norm: str, steps: int) -> NDArray[np.int64]:
    """Clip each row to ``norm`` at most 1 and round it towards zero onto the grid ``1 / steps``.

    Returns the integers ``k`` (the grid point is ``k / steps``, times the bound ``C`` once released) with
    ``||k||_1 <= steps`` or ``||k||_2 <= steps``, checked exactly in integers: a row that floating point
    leaves a hair above is shrunk one unit at a time on its largest coordinate until it fits.

    Parameters
    ----------
    vectors : array_like of float, shape (n, d)
        Finite real vectors.
    norm : {"l1", "l2"}
    steps : int
        Grid points per unit of the bound, ``1 <= steps <= 2^20``.

    Returns
    -------
    numpy.ndarray of int64, shape (n, d)

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).

    Examples
    --------
    >>> clip_to_grid([[3.0, 4.0]], norm="l2", steps=10).tolist()
    [[6, 8]]
    """
    v = check_float_array(vectors, "vectors", finite=True, ndim=2, min_size=1)
    check_choice(norm, "norm", NORMS)
    m = check_int(steps, "steps", minimum=1, maximum=1 << 20)
    scale = np.maximum(np.abs(v).max(axis=1), 1e150) / 1e150  # exactly 1 unless the row's norm could overflow
    unit = v / scale[:, None]
    size = np.abs(unit).sum(axis=1) if norm == "l1" else np.sqrt((unit * unit).sum(axis=1))
    shrink = np.minimum(1.0, 1.0 / np.maximum(size, 1e-300) / scale)  # a norm below 1e-300 is below 1: not shrunk
    k = (np.sign(v) * np.floor(np.abs(v) * shrink[:, None] * m)).astype(np.int64)
    limit = m if norm == "l1" else m * m
    for i in np.flatnonzero(_grid_norm(k, norm) > limit):
        while _grid_norm(k[i : i + 1], norm)[0] > limit:
            j = int(np.argmax(np.abs(k[i])))
            k[i, j] -= np.sign(k[i, j])
    return k


def _checked_pair(norm: object, noise: object) -> tuple[str, str]:
    """``(norm, noise)`` checked, refusing the pair the table does not cover (l1 clip, Gaussian noise)."""
    check_choice(norm, "norm", NORMS)
    check_choice(noise, "noise", NOISES)
    if (norm, noise) == ("l1", "gaussian"):
        raise ValueError("noise='gaussian' needs norm='l2' (the Gaussian mechanism is calibrated to an l2 sensitivity)")
    return str(norm), str(noise)


def sensitivity(norm: str, noise: str, *, bound: float, dimension: int) -> float:
    """DP-Rewrite's table: the sensitivity of clip-then-noise for replace-one neighbouring documents.

    ``2C`` for an l1 clip with Laplace noise, ``2C sqrt(d)`` for an l2 clip with Laplace noise (the
    Laplace mechanism needs an l1 distance), ``2C`` for an l2 clip with Gaussian noise.

    Parameters
    ----------
    norm : {"l1", "l2"}
    noise : {"laplace", "gaussian"}
    bound : float
        The clipping bound ``C > 0``.
    dimension : int
        The vector's length ``d >= 1``.

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or an l1 clip with Gaussian noise.

    Examples
    --------
    >>> sensitivity("l2", "laplace", bound=1.0, dimension=16)
    8.0
    """
    norm, noise = _checked_pair(norm, noise)
    c, d = check_positive(bound, "bound"), check_int(dimension, "dimension", minimum=1)
    root_d = (math.sqrt(d) if d < 2**1000 else math.inf) if (norm, noise) == ("l2", "laplace") else 1.0
    return check_real(2.0 * c * root_d, "the sensitivity 2 bound sqrt(dimension)")


def grid_sensitivity(norm: str, noise: str, *, steps: int, dimension: int) -> int:
    """The same sensitivity in grid units, exactly: ``2 steps``, ``floor(2 steps sqrt(d))`` or ``2 steps``.

    Parameters and errors as :func:`sensitivity`, with ``steps`` (grid points per unit of the bound,
    :func:`clip_to_grid`) in place of ``bound``; returns an int.
    """
    norm, noise = _checked_pair(norm, noise)
    m, d = check_int(steps, "steps", minimum=1, maximum=1 << 20), check_int(dimension, "dimension", minimum=1)
    return math.isqrt(4 * m * m * d) if (norm, noise) == ("l2", "laplace") else 2 * m


@dataclass(frozen=True)
class TextRelease:
    """One calibrated clip-then-noise release; call it as ``release(k, size, rng)``.

    ``k`` is one clipped grid vector (:func:`clip_to_grid`) or a batch of them; the call returns
    ``bound / steps * (k + Z)`` with ``Z`` exact discrete Laplace (scale ``scale``) or discrete Gaussian
    (scale ``scale``) noise: ``size`` releases of one vector (shape ``(size, d)``), or one release per
    row of a batch when ``size`` is None.  The signature is the one :func:`dptutor.audit.audit_pair` calls.

    Attributes
    ----------
    norm, noise : str
    bound : float
        The clipping bound ``C``.
    steps, dimension : int
    scale : fractions.Fraction
        The noise scale in grid units.
    used_sensitivity : int
        The sensitivity (grid units) the scale was calibrated to.
    claimed_epsilon : float
        The epsilon the calibration aimed at.
    delta : float
        0 for Laplace noise.
    """

    norm: str
    noise: str
    bound: float
    steps: int
    dimension: int
    scale: Fraction
    used_sensitivity: int
    claimed_epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        _checked_pair(self.norm, self.noise)
        sampler_check = check_scale if self.noise == "laplace" else check_sigma
        dlt = check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        if (dlt == 0.0) != (self.noise == "laplace"):
            raise ValueError("delta must be 0 for Laplace noise and in (0, 1) for Gaussian noise")
        _set_fields(self, scale=sampler_check(self.scale, "scale"), delta=dlt,
                    used_sensitivity=check_int(self.used_sensitivity, "used_sensitivity", minimum=0))
        if self.noise == "laplace" and Fraction(self.true_sensitivity) / self.scale > 1e300:
            raise ValueError("scale (claimed_sensitivity / epsilon) is too small: the true epsilon is past the float range")

    @property
    def true_sensitivity(self) -> int:
        """The sensitivity the clip really gives (grid units, :func:`grid_sensitivity`)."""
        return grid_sensitivity(self.norm, self.noise, steps=self.steps, dimension=self.dimension)

    @property
    def epsilon(self) -> float:
        """The honest epsilon: ``Delta_1 / t`` for Laplace; the zCDP bound at ``delta`` for Gaussian."""
        if self.noise == "laplace":
            return round_up(Fraction(self.true_sensitivity) / self.scale)
        rho = round_up(Fraction(self.true_sensitivity**2) / (2 * self.scale**2))  # never an ulp below
        return zcdp_to_dp(rho, self.delta)

    def __call__(self, k: ArrayLike, size: int | None = None, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        """Release ``k`` (see the class docstring): ``size`` releases of one vector, or one per row."""
        grid, shape = _checked_call(k, size, self)
        rng = check_rng(rng)
        sampler = sample_discrete_laplace if self.noise == "laplace" else sample_discrete_gaussian
        noisy = grid + sampler(self.scale, shape, rng)
        return noisy * (self.bound / self.steps)


def _checked_grid(k: ArrayLike, release: TextRelease | DPTextRelease) -> NDArray[np.int64]:
    """``k`` as an int64 vector or batch of length ``dimension`` whose rows are inside the clip."""
    arr = np.asarray(k)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must hold integers (grid points from clip_to_grid), got dtype {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[-1] != release.dimension:
        raise ValueError(f"k must have shape ({release.dimension},) or (n, {release.dimension}), got {arr.shape}")
    rows, limit = np.atleast_2d(arr), release.steps if release.norm == "l1" else release.steps**2
    if arr.size and (rows.max() > release.steps or rows.min() < -release.steps  # before the int64 cast and sums wrap
                     or (_grid_norm(rows.astype(np.float64), release.norm) > 2 * limit).any()
                     or (_grid_norm(rows.astype(np.int64), release.norm) > limit).any()):
        raise ValueError(f"k must be clipped: its {release.norm} norm exceeds steps={release.steps}")
    return arr.astype(np.int64)  # exact: every coordinate is within +-steps


def _set_fields(release: TextRelease | DPTextRelease, **checked: object) -> None:
    """Check the fields common to both releases, and store them and ``checked`` in canonical form."""
    checked.update(bound=check_real(release.bound, "bound", low=0.0, low_open=True, high=1e280),  # outputs stay finite
                   steps=check_int(release.steps, "steps", minimum=1, maximum=1 << 20),
                   dimension=check_int(release.dimension, "dimension", minimum=1, maximum=MAX_ELEMENTS),  # k has d entries
                   claimed_epsilon=check_positive(release.claimed_epsilon, "claimed_epsilon"))
    for name, value in checked.items():
        object.__setattr__(release, name, value)  # a frozen dataclass stores its canonical fields this way


def _checked_call(k: ArrayLike, size: object, release: TextRelease | DPTextRelease) -> tuple[NDArray[np.int64], tuple[int, ...]]:
    """The checked grid ``k`` and the output shape: ``(size, d)`` for one vector, ``k``'s shape for a batch."""
    grid = _checked_grid(k, release)
    if size is None:
        return grid, grid.shape
    if grid.ndim != 1:
        raise ValueError(f"size must be None when k is a batch of shape {grid.shape}")
    return grid, (check_size(size)[0], release.dimension)


def _scale(sens: int | Fraction, epsilon: float, names: str = "epsilon") -> Fraction:
    """``sens / epsilon`` as an exact Fraction (epsilon converted exactly), in the exact sampler's range."""
    try:
        return check_scale(Fraction(sens) / Fraction(epsilon))
    except ValueError as exc:
        raise ValueError(f"{names} give(s) a noise scale outside the exact sampler's range ({exc})") from exc


def _gaussian_scale(sens: int, epsilon: float, delta: float) -> Fraction:
    """The smallest integer sigma whose zCDP bound gives ``(epsilon, delta)`` (integers keep the fast path)."""
    log_inv = math.log(1.0 / delta)
    root_rho = math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)
    try:
        return check_sigma(Fraction(math.ceil(sens / (math.sqrt(2.0) * root_rho) * (1.0 + 1e-9))))
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        raise ValueError(f"epsilon and delta give a noise scale outside the exact sampler's range ({exc})") from exc


def calibrate(norm: str, noise: str, *, bound: float, steps: int, dimension: int, epsilon: float,
              delta: float = 0.0) -> TextRelease:
    """The release with the noise that ``epsilon`` (and ``delta`` for Gaussian noise) needs.

    Laplace: scale ``t = Delta_1 / epsilon`` in grid units, exactly epsilon-DP.  Gaussian: the smallest
    integer sigma whose zCDP bound gives ``(epsilon, delta)``.

    Parameters
    ----------
    norm : {"l1", "l2"}
    noise : {"laplace", "gaussian"}
    bound : float
        The clipping bound ``C > 0``.
    steps, dimension : int
    epsilon : float
        Target epsilon, ``> 0``.
    delta : float, optional
        In (0, 1) for Gaussian noise; must be 0 (the default) for Laplace noise.

    Returns
    -------
    TextRelease

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).

    Examples
    --------
    >>> calibrate("l1", "laplace", bound=1.0, steps=100, dimension=20, epsilon=2.0).epsilon
    2.0
    """
    norm, noise = _checked_pair(norm, noise)
    c, eps = check_positive(bound, "bound"), check_positive(epsilon, "epsilon")
    sens = grid_sensitivity(norm, noise, steps=steps, dimension=check_int(dimension, "dimension", minimum=1, maximum=MAX_ELEMENTS))
    if noise == "laplace":
        if check_real(delta, "delta", low=0.0) != 0.0:
            raise ValueError("delta must be 0 for Laplace noise (it is pure epsilon-DP)")
        return TextRelease(norm, noise, c, steps, dimension, _scale(sens, eps), sens, eps)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return TextRelease(norm, noise, c, steps, dimension, _gaussian_scale(sens, eps, dlt), sens, eps, dlt)


def wrong_sensitivity_release(*, bound: float, steps: int, dimension: int, epsilon: float,
                              claimed_sensitivity: float | None = None) -> TextRelease:
    """An l2 clip with Laplace noise calibrated to a *claimed* sensitivity below the true ``2C sqrt(d)``.

    The family of underestimated sensitivities (the kind of error Habernal 2021 found in ADePT): the
    noise scale is ``claimed / epsilon``, so the true epsilon is ``2C sqrt(d) / claimed`` times the
    claimed one.  The default claim is ``C``.

    Parameters
    ----------
    bound : float
        The clipping bound ``C > 0``.
    steps, dimension : int
    epsilon : float
        The claimed epsilon, ``> 0``.
    claimed_sensitivity : float, optional
        The sensitivity used, ``> 0`` (default ``bound``), in the units of ``bound``.

    Returns
    -------
    TextRelease
        Its ``epsilon`` is the true one; ``claimed_epsilon`` the claim.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    c, m = check_positive(bound, "bound"), check_int(steps, "steps", minimum=1, maximum=1 << 20)
    claimed = c if claimed_sensitivity is None else check_positive(claimed_sensitivity, "claimed_sensitivity")
    eps = check_positive(epsilon, "epsilon")
    grid_claim = Fraction(claimed) / Fraction(c) * m
    d = check_int(dimension, "dimension", minimum=1, maximum=MAX_ELEMENTS)
    scale = _scale(grid_claim, eps, "epsilon and claimed_sensitivity")
    return TextRelease("l2", "laplace", c, m, d, scale, math.floor(grid_claim), eps)


@dataclass(frozen=True)
class DPTextRelease:
    """The l1 pipeline with DPText's noise: :func:`dptutor.dptext.sample_dptext` at scale ``2C / epsilon``.

    NaN draws become zero noise, as in the authors' code, so about half the releases of a coordinate
    equal its clipped value exactly.  The claimed epsilon is ``claimed_epsilon``; the true one is infinite.
    """

    bound: float
    steps: int
    dimension: int
    claimed_epsilon: float

    def __post_init__(self) -> None:
        _set_fields(self)
        check_real(2.0 * self.bound / self.claimed_epsilon, "the noise scale 2 bound / claimed_epsilon", low=0.0, low_open=True, high=1e280)

    @property
    def norm(self) -> str:
        """Always ``"l1"``: DPText's noise on the l1 pipeline."""
        return "l1"

    def __call__(self, k: ArrayLike, size: int | None = None, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        """Release ``k`` with DPText's noise, with the signature of :meth:`TextRelease.__call__`."""
        grid, shape = _checked_call(k, size, self)
        rng = check_rng(rng)
        values = np.broadcast_to(grid * (self.bound / self.steps), shape)
        return sample_dptext(shape, values, 2.0 * self.bound / self.claimed_epsilon, rng=rng, nan="zero")


def adversarial_pair(norm: str, noise: str, *, steps: int, dimension: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Two clipped grid vectors as far apart as the clip allows, for the pair's distance.

    l1 clip: ``steps e_1`` and ``steps e_2`` (l1 distance ``2 steps``).  l2 clip with Laplace noise:
    ``a (1, ..., 1)`` and its negative with ``a = floor(steps / sqrt(d))`` (l1 distance ``2 a d``, which
    is ``2 steps sqrt(d)`` when ``steps / sqrt(d)`` is an integer).  l2 clip with Gaussian noise:
    ``steps e_1`` and its negative (l2 distance ``2 steps``).

    Parameters
    ----------
    norm : {"l1", "l2"}
    noise : {"laplace", "gaussian"}
    steps, dimension : int
        ``dimension >= 2``.

    Returns
    -------
    tuple of two numpy.ndarray of int64

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    norm, noise = _checked_pair(norm, noise)
    m = check_int(steps, "steps", minimum=1, maximum=1 << 20)
    d = check_int(dimension, "dimension", minimum=2, maximum=1 << 24)
    x, y = np.zeros(d, dtype=np.int64), np.zeros(d, dtype=np.int64)
    if norm == "l1":
        x[0], y[1] = m, m
    elif noise == "laplace":
        a = math.isqrt(m * m // d)
        x[:], y[:] = a, -a
    else:
        x[0], y[0] = m, -m
    return x, y


def nearest_centroid_accuracy(train: ArrayLike, train_labels: ArrayLike, test: ArrayLike,
                              test_labels: ArrayLike) -> float:
    """Accuracy of the nearest-centroid classifier (Euclidean) fitted on ``train``, measured on ``test``.

    Parameters
    ----------
    train, test : array_like of float, shape (n, d)
    train_labels, test_labels : array_like of int
        Labels 0 or 1, both present in ``train_labels``.

    Returns
    -------
    float
        The share of test rows whose nearer centroid has their label.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    xa = check_float_array(train, "train", finite=True, ndim=2, min_size=1)
    xb = check_float_array(test, "test", finite=True, ndim=2, min_size=1)
    if xa.shape[1] != xb.shape[1]:
        raise ValueError(f"test must have {xa.shape[1]} columns like train, got {xb.shape[1]}")
    ya, yb = check_float_array(train_labels, "train_labels", ndim=1), check_float_array(test_labels, "test_labels", ndim=1)
    for name, arr, rows in (("train_labels", ya, xa), ("test_labels", yb, xb)):
        if arr.size != rows.shape[0] or not np.isin(arr, (0.0, 1.0)).all():
            raise ValueError(f"{name} must hold one label 0 or 1 per row")
    if not (np.isin(0.0, ya) and np.isin(1.0, ya)):
        raise ValueError("train_labels must contain both labels 0 and 1")
    top = max(float(np.abs(xa).max()), float(np.abs(xb).max()))  # scaled by an exact power of 2 past 1e150: no overflow
    xa, xb = (xa, xb) if top <= 1e150 else (np.ldexp(xa, -math.frexp(top)[1]), np.ldexp(xb, -math.frexp(top)[1]))
    centres = np.stack([xa[ya == c].mean(axis=0) for c in (0.0, 1.0)])
    dist = ((xb[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return float((np.argmin(dist, axis=1) == yb).mean())
