"""Newton and Halley root finding with derivatives from fesens' AD (forward mode).

Functions (workload 4 of tests/ad/test_ad_workloads.py): f(x) = 5x¹⁰ − c, g(x) = 3x³(cos x − 10x),
h(x) = exp((5x/2)·sin(x)^(eˣ)). Newton needs f′, Halley f′ and f″; both are exact here,
so the iterations converge quadratically (Newton) and cubically (Halley). A function of one
number is differentiated in forward mode (dual numbers, no tape): ``value_and_grad(f)``
gives f and f′ in one pass, ``value_and_grad(grad(f))`` f′ and f″. For comparison, the same
Newton iterations run with central finite-difference derivatives; the table gives the
iteration counts and the wall time of each solve.

Run: ``python examples/root_finding.py``.
"""

from __future__ import annotations

import time

import numpy as np

from fesens.ad import grad, value_and_grad


def newton(value_and_slope, x0, tol=1e-13, maxiter=50):
    """Newton's method ``x ← x − f/f′``; ``value_and_slope(x) = (f(x), f′(x))``; returns
    ``(root, iterations)``."""
    x = x0
    for k in range(1, maxiter + 1):
        fx, d1 = value_and_slope(x)
        step = fx / d1
        x -= step
        if abs(step) <= tol * max(1.0, abs(x)):
            return x, k
    raise RuntimeError(f"Newton did not converge in {maxiter} iterations (x = {x})")


def halley(f, x0, slopes, tol=1e-13, maxiter=50):
    """Halley's method ``x ← x − 2 f f′ / (2 f′² − f f″)``; ``slopes(x) = (f′(x), f″(x))``;
    returns ``(root, iterations)``."""
    x = x0
    for k in range(1, maxiter + 1):
        fx, (d1, d2) = f(x), slopes(x)
        step = 2 * fx * d1 / (2 * d1**2 - fx * d2)
        x -= step
        if abs(step) <= tol * max(1.0, abs(x)):
            return x, k
    raise RuntimeError(f"Halley did not converge in {maxiter} iterations (x = {x})")


def central_difference(f, h=1e-6):
    """``x ↦ (f(x), (f(x + h) − f(x − h)) / 2h)``: three evaluations of ``f``."""
    return lambda x: (f(x), (f(x + h) - f(x - h)) / (2 * h))


#: The derivative workload (checked in tests/ad/test_ad_workloads.py).
WORKLOAD = {
    "f(x) = 5x^10": lambda x: 5 * x**10,
    "g(x) = 3x^3 (cos x - 10x)": lambda x: 3 * x**3 * (np.cos(x) - 10 * x),
    "h(x) = exp((5x/2) sin(x)^(e^x))": lambda x: np.exp((5 * x / 2) * np.sin(x) ** np.exp(x)),
}


def problems():
    """(name, function, starting point, exact root or None)."""
    return [
        ("5x^10 - 5120", lambda x: 5 * x**10 - 5120.0, 2.5, 2.0),
        ("3x^3 (cos x - 10x)", lambda x: 3 * x**3 * (np.cos(x) - 10 * x), 0.3, None),
        ("exp((5x/2) sin(x)^(e^x)) - 2", lambda x: np.exp((5 * x / 2) * np.sin(x) ** np.exp(x))
         - 2.0, 1.0, None),
    ]


def timed(method, *args, repeats: int = 5, **options):
    """``(method(*args, **options), least wall time over repeats calls)``."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = method(*args, **options)
        seconds.append(time.perf_counter() - start)
    return result, min(seconds)


def run() -> list[dict]:
    """Solve every problem with Newton and Halley (AD derivatives) and Newton (FD)."""
    rows = []
    for name, f, x0, exact in problems():
        (x_newton, k_newton), t_newton = timed(newton, value_and_grad(f), x0)
        (x_halley, k_halley), t_halley = timed(halley, f, x0, value_and_grad(grad(f)))
        (x_fd, k_fd), t_fd = timed(newton, central_difference(f), x0, tol=1e-10)
        rows.append(dict(problem=name, exact=exact, newton=x_newton, newton_iterations=k_newton,
                         newton_seconds=t_newton, halley=x_halley, halley_iterations=k_halley,
                         halley_seconds=t_halley, fd_newton=x_fd, fd_iterations=k_fd,
                         fd_seconds=t_fd, residual=abs(f(x_halley))))
    return rows


def main() -> None:
    print(f"{'problem':32s} {'root (Halley)':>22s} {'Newton it':>9s} {'Halley it':>9s} "
          f"{'FD-Newton it':>12s} {'|f(root)|':>10s} {'Newton':>9s} {'Halley':>9s} "
          f"{'FD-Newton':>9s}")
    for row in run():
        print(f"{row['problem']:32s} {row['halley']:22.16g} {row['newton_iterations']:9d} "
              f"{row['halley_iterations']:9d} {row['fd_iterations']:12d} {row['residual']:10.2e} "
              + " ".join(f"{row[k] * 1e3:7.3f}ms"
                         for k in ("newton_seconds", "halley_seconds", "fd_seconds")))
    print("(times: least of 5 solves; an AD derivative runs the function once on dual "
          "numbers,\n which costs more than the three plain float evaluations of a central "
          "difference;\n AD derivatives are exact and need no step size)")
    print("\nDerivatives at x = 2 (AD, nested grad):")
    for name, f in WORKLOAD.items():
        print(f"  {name:30s} first {grad(f)(2.0):+.17g}   second {grad(grad(f))(2.0):+.17g}")


if __name__ == "__main__":
    main()
