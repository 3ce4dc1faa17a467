"""Coverage of the exponent contrast of two laws that are not log-linear (the offset power law), with the size
deviations of the two laws correlated rho (docs/science.md, "Uncertainty"; `rankscale.laws.paired`).

Synthetic pairs of laws over six sizes, log y_a = log(E_a + C_a S^-alpha_a) + u_a + e_a and the same for b, with
document noise (e_a, e_b) ~ N(0, [[V, cV], [cV, V]]) (V size_level_coverage.py's synthetic covariance, c the
documents' correlation between the two laws) and size deviations (u_a, u_b) of SD tau each, correlated rho. Each
simulation draws B paired document replicates and judges, through the tables' own code
(`rankscale.tables.lawkit.exponent_contrast`), whether the contrast's interval holds alpha_a - alpha_b:

- `estimated`: the size deviations correlated as REML estimates them (what the tables do);
- `shared`: the same normals for both laws (rho = 1 whatever the data: what the tables did before);
- `alone`: law a's own exponent interval (powerlaw_fits.csv's), the offset law's coverage without any contrast.

    python benchmarks/contrast_coverage.py [--sims 500] [--tau 0.03] [--rho 0 0.5 0.9] [--refits 100]

Prints per cell the coverage of both with its Monte Carlo standard error, the median width and the mean rho.

`--recovery` instead measures how well REML's rho (`rankscale.laws.paired.size_correlation`) recovers a planted
one with many sizes: two laws of unlike designs (a line and a parabola in x) over `--sizes` points, documents
N(0, 0.02^2) correlated 0.5 between the laws, size deviations of SD 0.05 correlated rho; the mean and SD of the
estimates over `--sims` pairs per planted rho.

    python benchmarks/contrast_coverage.py --recovery [--sims 40] [--sizes 80] [--rho 0 0.5 0.9]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from size_level_coverage import SIZES, synthetic_covariance  # the ladder's six sizes and their document covariance

from rankscale.bootstrap import interval
from rankscale.laws import Points
from rankscale.laws.power import OFFSET_POWER_LAW, OffsetPowerLaw
from rankscale.tables import lawkit
from rankscale.tables.noise import Noise

LAWS = ((1.0, 40.0, 0.30), (0.8, 30.0, 0.35))  # (E, C, alpha) of a and b: floors well inside their domain
DOCUMENTS_CORRELATION = 0.7  # of one size's documents between the two laws
LEVEL = 0.95


@contextmanager
def shared_draws() -> Iterator[None]:
    """The tables' code with the size deviations shared (rho = 1), as before the correlation was estimated."""
    estimated = lawkit.size_correlation_of
    lawkit.size_correlation_of = lambda *args: 1.0  # type: ignore[assignment]
    try:
        yield
    finally:
        lawkit.size_correlation_of = estimated


def planted_pair(rho: float, rng: np.random.Generator, designs: tuple[np.ndarray, np.ndarray], tau: float,
                 sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """log y of two laws over len(designs[0]) sizes (law a's coefficients 1, law b's 0) with documents N(0, sd^2)
    correlated 0.5 between the laws and size deviations of SD tau correlated rho; and the documents' joint V."""
    m = len(designs[0])
    V1 = sd * sd * np.eye(m)
    V = np.block([[V1, 0.5 * V1], [0.5 * V1, V1]])
    e = np.linalg.cholesky(V) @ rng.standard_normal(2 * m)
    z = rng.standard_normal((2, m))
    u = tau * np.stack([z[0], rho * z[0] + np.sqrt(1 - rho * rho) * z[1]])
    return u[0] + e[:m] + designs[0] @ np.ones(designs[0].shape[1]), u[1] + e[m:], V


def recovery(rho: float, sims: int, sizes: int, seed: int) -> tuple[float, float]:
    """Mean and SD of REML's rho over `sims` pairs planted with `rho` (tau 0.05 each, documents' SD 0.02)."""
    from rankscale.laws.paired import size_correlation

    x = np.linspace(10.0, 15.0, sizes)
    designs = (np.stack([np.ones(sizes), x], axis=1), np.stack([np.ones(sizes), x, x * x], axis=1))  # unlike designs
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(sims):
        ya, yb, V = planted_pair(rho, rng, designs, tau=0.05, sd=0.02)
        estimates.append(size_correlation(designs, (ya, yb), V, np.eye(sizes), (0.05**2, 0.05**2)))
    return float(np.mean(estimates)), float(np.std(estimates, ddof=1))


def simulate(tau: float, rho: float, sims: int, replicates: int, refits: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    V = synthetic_covariance()
    joint = np.block([[V, DOCUMENTS_CORRELATION * V], [DOCUMENTS_CORRELATION * V, V]])
    root = np.linalg.cholesky(joint)
    points = Points.of(SIZES)
    truth = [np.log(e + c * SIZES**-a) for e, c, a in LAWS]
    target = LAWS[0][2] - LAWS[1][2]
    hits = {"estimated": 0, "shared": 0}
    widths: dict[str, list[float]] = {"estimated": [], "shared": []}
    rhos, done, alone = [], 0, 0
    for s in range(sims):
        z = rng.standard_normal((2, len(SIZES)))
        u = tau * np.stack([z[0], rho * z[0] + np.sqrt(1 - rho * rho) * z[1]])
        e = root @ rng.standard_normal(2 * len(SIZES))
        log_y = [truth[0] + u[0] + e[: len(SIZES)], truth[1] + u[1] + e[len(SIZES) :]]
        noise_reps = rng.standard_normal((replicates, 2 * len(SIZES))) @ root.T
        y = (np.exp(log_y[0]), np.exp(log_y[1]))
        reps = (y[0] * np.exp(noise_reps[:, : len(SIZES)]), y[1] * np.exp(noise_reps[:, len(SIZES) :]))
        try:
            laws = (OffsetPowerLaw.fit(points, y[0]), OffsetPowerLaw.fit(points, y[1]))
        except ValueError:
            continue
        noise = Noise([f"m{i}" for i in range(len(SIZES))], None, seed + s)
        keys = ("family", f"sim{s}")
        for name in hits:
            if name == "shared":
                with shared_draws():
                    contrast = lawkit.exponent_contrast(OFFSET_POWER_LAW, points, laws, y, reps, noise, keys, refits)
            else:
                contrast = lawkit.exponent_contrast(OFFSET_POWER_LAW, points, laws, y, reps, noise, keys, refits)
            low, high = interval(contrast.replicates, LEVEL, contrast.point)
            hits[name] += int(low <= target <= high)
            widths[name].append(float(high - low))
        first, second = (lawkit.LawNoise.of(OFFSET_POWER_LAW, law, points, v, r, noise, keys)
                         for law, v, r in zip(laws, y, reps, strict=True))  # fmt: skip
        rhos.append(lawkit.size_correlation_of(OFFSET_POWER_LAW, laws, points, y, reps, (first, second)))
        low, high = interval(first.refit(OFFSET_POWER_LAW, laws[0], points, refits)["alpha"], LEVEL, laws[0].alpha)
        alone += int(low <= LAWS[0][2] <= high)
        done += 1
    out: dict[str, float] = {"sims": done, "mean_rho": float(np.mean(rhos)), "alone": alone / done}
    for name, count in hits.items():
        p = count / done
        out[name] = p
        out[f"{name}_se"] = float(np.sqrt(p * (1 - p) / done))
        out[f"{name}_width"] = float(np.median(widths[name]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--tau", type=float, default=0.03)
    parser.add_argument("--rho", type=float, nargs="+", default=[0.0, 0.5, 0.9])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--refits", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--recovery", action="store_true", help="REML's rho against a planted one, many sizes")
    parser.add_argument("--sizes", type=int, default=80, help="with --recovery: points per law")
    args = parser.parse_args()
    if args.recovery:
        print(f"REML's rho, two laws of {args.sizes} sizes, tau 0.05 each, {args.sims} pairs a planted rho")
        print("| planted rho | mean estimate | SD of one | seconds |")
        print("| --- | --- | --- | --- |")
        for k, rho in enumerate(args.rho):
            start = time.perf_counter()
            mean, sd = recovery(rho, args.sims, args.sizes, args.seed + 1000 * k)
            print(f"| {rho:g} | {mean:.3f} | {sd:.3f} | {time.perf_counter() - start:.0f} |", flush=True)
        return
    print(f"offset power law, 6 sizes, tau {args.tau} each, {args.sims} simulations a cell, "
          f"{args.replicates} replicates, {args.refits} refits")  # fmt: skip
    print(
        "| rho | estimated | shared (rho = 1) | law a alone | width estimated / shared | mean rho estimated | seconds |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for k, rho in enumerate(args.rho):
        start = time.perf_counter()
        r = simulate(args.tau, rho, args.sims, args.replicates, args.refits, args.seed + 1000 * k)
        print(f"| {rho:g} | {100 * r['estimated']:.1f} ± {100 * r['estimated_se']:.1f}% "
              f"| {100 * r['shared']:.1f} ± {100 * r['shared_se']:.1f}% | {100 * r['alone']:.1f}% "
              f"| {r['estimated_width']:.4f} / {r['shared_width']:.4f} | {r['mean_rho']:.2f} "
              f"| {time.perf_counter() - start:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
