"""Renyi DP and zero-concentrated DP of the Gaussian mechanism, and their conversion to (epsilon, delta).

Renyi DP (Mironov 2017) of the Gaussian and of the Poisson-subsampled Gaussian (Mironov, Talwar and
Zhang 2019), its conversion to (epsilon, delta)-DP, and zero-concentrated DP (Bun and Steinke 2016).
Labels refer to the chapter "Composition and accounting".  The names are also importable from
:mod:`dptutor.accounting`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dptutor._validate import check_choice, check_float_array, check_int, check_positive, check_real

__all__ = [
    "ORDERS",
    "rdp_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
    "zcdp_gaussian",
    "zcdp_to_dp",
]

#: The integer Renyi orders an accountant tries by default (as in dp-accounting, integers only).
ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (80, 96, 128, 160, 192, 256)

#: The largest Renyi order accepted (the subsampled-Gaussian sum has order + 1 terms).
MAX_ORDER: int = 10**4


def rdp_gaussian(order: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The Renyi divergence of order ``order`` between ``N(0, sigma^2)`` and ``N(Delta_2, sigma^2)``:
    ``order Delta_2^2 / (2 sigma^2)`` (Mironov 2017, Proposition 7; ``acc-eq-rdp-gaussian``).

    Parameters
    ----------
    order : float
        ``> 1``.
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The l2 sensitivity ``Delta_2 > 0`` (default 1).

    Returns
    -------
    float
        The RDP at ``order`` (``inf`` on overflow).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).

    Examples
    --------
    >>> rdp_gaussian(2.0, 1.0)
    1.0
    """
    a = check_real(order, "order", low=1.0, low_open=True)
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    with np.errstate(over="ignore", under="ignore"):
        ratio = float(np.float64(d) / np.float64(s))
        value = float(np.float64(a) * np.float64(ratio) ** 2 / 2.0)
    return value if math.isfinite(value) else math.inf


def rdp_subsampled_gaussian(order: int, sigma: float, sampling_probability: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism at an integer ``order`` >= 2 (Mironov, Talwar
    and Zhang 2019, Section 3.3; ``acc-eq-subsampled``), for a query of l2 sensitivity 1 and noise ``N(0, sigma^2)``:

        (1 / (order - 1)) ln sum_{j=0}^{order} C(order, j) (1 - q)^{order - j} q^j exp((j^2 - j) / (2 sigma^2)),

    the divergence ``D_order((1 - q) N(0, sigma^2) + q N(1, sigma^2) || N(0, sigma^2))``, summed in log space.

    Parameters
    ----------
    order : int
        2 to 10^4.
    sigma : float
        The noise's standard deviation, ``> 0``.
    sampling_probability : float
        ``q`` in (0, 1].

    Returns
    -------
    float
        The RDP at ``order``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    a = check_int(order, "order", minimum=2, maximum=MAX_ORDER)
    s = check_positive(sigma, "sigma")
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    if q == 1.0:
        return rdp_gaussian(a, s)
    # The binomial weights sum to 1, so the sum is 1 + S with S = sum_{j >= 2} C(order, j) (1 - q)^{order - j}
    # q^j expm1((j^2 - j) / (2 sigma^2)), all terms positive: ln(1 + S) from ln S has no cancellation
    # (summing the order + 1 terms directly lost most digits when the RDP is tiny, and could round it down).
    j = np.arange(2, a + 1, dtype=np.float64)
    log_comb = special.gammaln(a + 1.0) - special.gammaln(j + 1.0) - special.gammaln(a - j + 1.0)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        x = (j * j - j) * (np.float64(1.0) / (np.float64(2.0) * s * s))
        log_expm1 = np.where(x > 30.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(np.minimum(x, 30.0))))
        terms = log_comb + (a - j) * math.log1p(-q) + j * math.log(q) + log_expm1
    if np.any(np.isnan(terms)) or np.any(terms == np.inf):
        return math.inf
    log_s = float(special.logsumexp(terms))
    if log_s == -math.inf:
        return 0.0
    value = (log_s + math.log1p(math.exp(-log_s)) if log_s > 0.0 else math.log1p(math.exp(log_s))) / (a - 1)
    return max(0.0, value) if math.isfinite(value) else math.inf


def rdp_to_dp(orders: Any, rdp: Any, delta: float, *, method: str = "improved") -> tuple[float, float]:
    """``(epsilon, order)``: the smallest epsilon over the orders for which RDP gives (epsilon, delta)-DP.

    ``"classic"``: Mironov (2017), Proposition 3, ``epsilon = rdp + ln(1/delta) / (order - 1)`` (``acc-eq-rdp-classic``).
    ``"improved"``: Canonne, Kamath and Steinke (2020), Proposition 12 (also Asoodeh et al. 2021),
    ``epsilon = rdp + ln(1 - 1/order) - (ln delta + ln order) / (order - 1)`` (``acc-eq-rdp-improved``), the conversion
    dp-accounting uses.  Orders at or below 1 are refused.

    Parameters
    ----------
    orders : array_like
        Renyi orders, 1-D, finite, all ``> 1``.
    rdp : array_like
        The RDP at each order, same length (``inf`` allowed).
    delta : float
        In (0, 1).
    method : {"improved", "classic"}, optional
        The conversion (default ``"improved"``).

    Returns
    -------
    tuple of float
        ``(epsilon, order)``: the best epsilon and the order that attains it.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range, or lengths that differ.
    """
    a = check_float_array(orders, "orders", finite=True, ndim=1, min_size=1)
    r = check_float_array(rdp, "rdp", ndim=1, min_size=1)
    if a.shape != r.shape:
        raise ValueError(f"orders and rdp must have the same length, got {a.size} and {r.size}")
    if np.any(a <= 1.0):
        raise ValueError("orders must all be > 1")
    if np.any(r < 0) or np.any(r == -np.inf):
        raise ValueError("rdp must hold non-negative values (inf allowed)")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    method = check_choice(method, "method", ("classic", "improved"))
    with np.errstate(over="ignore", invalid="ignore"):
        if method == "classic":
            eps = r - math.log(dlt) / (a - 1.0)  # not ln(1 / delta): 1 / 1e-310 overflows
        else:
            eps = r + np.log1p(-1.0 / a) - (math.log(dlt) + np.log(a)) / (a - 1.0)
    eps = np.where(np.isfinite(r), eps, np.inf)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(a[best])


def zcdp_gaussian(sigma: float, sensitivity: float = 1.0) -> float:
    """The Gaussian mechanism is rho-zCDP with ``rho = Delta_2^2 / (2 sigma^2)`` (Bun and Steinke 2016,
    Proposition 1.6): its RDP curve divided by the order.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The l2 sensitivity, ``> 0`` (default 1).

    Returns
    -------
    float
        ``rho``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range.
    """
    return rdp_gaussian(2.0, sigma, sensitivity) / 2.0


def zcdp_to_dp(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun and Steinke 2016, Proposition 1.3;
    ``acc-eq-zcdp``).

    Parameters
    ----------
    rho : float
        ``>= 0`` (``inf`` allowed).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        ``epsilon`` (``inf`` for an infinite ``rho``).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range.
    """
    r = check_real(rho, "rho", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    if r == math.inf:
        return math.inf
    log_inv = -math.log(dlt)  # not ln(1 / delta): 1 / 1e-310 overflows
    return r + 2.0 * (math.sqrt(r * log_inv) if r < 1e300 else math.sqrt(r) * math.sqrt(log_inv))
