"""Fit the rational tanh of ``additive_scores.cpp``: ``python -m rnmt.kernels.fit_tanh``.

tanh is odd, so it is approximated as ``x * P(x^2) / Q(x^2)`` on [0, 9] (beyond 9, float32
tanh is 1). P has degree 5 and Q degree 3 in x^2, Q(0) = 1. The coefficients minimise the
largest relative error on a dense grid: linear least squares on ``x P - tanh(x) Q = 0``,
reweighted by the previous Q and by each point's error until the errors level out (Lawson's
iteration). The fit works in u = (x / 9)^2, which keeps the system well conditioned, and
converts to powers of x^2 at the end. Prints the C++ constants and the float32 error.
"""

from __future__ import annotations

import numpy as np

LIMIT = 9.0  # float32 tanh(x) rounds to +-1 beyond this
P_TERMS, Q_TERMS = 6, 4


def fit(iterations: int = 40):
    x = np.linspace(0.0, LIMIT, 80001)[1:]
    y = np.tanh(x)
    u = (x / LIMIT) ** 2
    weight = np.ones_like(x)
    best = None
    for _ in range(iterations):
        # Divide the equation by tanh(x) so that the residual is the relative error.
        a = np.concatenate([np.stack([(x / y) * u**k for k in range(P_TERMS)], 1),
                            np.stack([-(u**k) for k in range(1, Q_TERMS)], 1)], 1)
        sol, *_ = np.linalg.lstsq(a / weight[:, None], 1.0 / weight, rcond=None)
        p, q = sol[:P_TERMS], np.concatenate([[1.0], sol[P_TERMS:]])
        qu = np.polyval(q[::-1], u)
        if qu.min() <= 0:
            raise RuntimeError("the denominator has a root in the range")
        err = np.abs(x * np.polyval(p[::-1], u) / qu - y) / y
        if best is None or err.max() < best[0]:
            best = (err.max(), p, q)
        weight = qu / np.sqrt(np.maximum(err, 1e-30) / err.max())
    _, p, q = best
    scale = LIMIT ** (-2.0 * np.arange(max(P_TERMS, Q_TERMS)))
    return (p * scale[:P_TERMS]).astype(np.float32), (q * scale[:Q_TERMS]).astype(np.float32)


def evaluate_float32(p: np.ndarray, q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The kernel's arithmetic: clamp, Horner in x^2, one division, all in float32."""
    x = np.clip(x.astype(np.float32), -LIMIT, LIMIT)
    z = x * x
    num, den = np.full_like(x, p[-1]), np.full_like(x, q[-1])
    for c in p[-2::-1]:
        num = (num * z + c).astype(np.float32)
    for c in q[-2::-1]:
        den = (den * z + c).astype(np.float32)
    return (x * num / den).astype(np.float32)


def main() -> None:
    p, q = fit()
    x = np.linspace(-12.0, 12.0, 4_000_001)
    err = np.abs(evaluate_float32(p, q, x).astype(np.float64) - np.tanh(x)).max()
    print("P:", ", ".join(f"{float(c):.9e}f" for c in p))
    print("Q:", ", ".join(f"{float(c):.9e}f" for c in q))
    print(f"largest absolute error in float32 on [-12, 12]: {err:.2e}")


if __name__ == "__main__":
    main()
