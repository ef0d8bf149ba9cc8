"""Weighted linear least squares for a handful of measured figures (render/specs/calibration.py fits a dataset
with it): each figure weighted by its precision as written, the unknowns kept non-negative, the uncertainties from
the covariance widened by Student's t. Pure maths."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

RELATIVE_FLOOR = 0.01  # no figure is trusted to better than 1%: runs differ by that much
ONE_SIGMA = 0.841345  # the normal distribution's CDF at one sigma


@dataclass(frozen=True)
class Estimate:
    """A fitted figure and its standard uncertainty (one sigma)."""

    value: float
    uncertainty: float

    @property
    def relative(self) -> float:
        return self.uncertainty / self.value if self.value else math.inf


@dataclass(frozen=True)
class LinearFit:
    coefficients: np.ndarray
    covariance: np.ndarray
    exactly_determined: bool


def predicted(fit: LinearFit, row: np.ndarray) -> Estimate:
    """A linear fit's value at one row of its design, with the uncertainty its covariance gives."""
    return Estimate(float(row @ fit.coefficients), math.sqrt(max(float(row @ fit.covariance @ row), 0.0)))


def written_precision(value: float, approximate: bool = False, written: str | None = None) -> float:
    """Half a unit of the figure's last digit as the data file writes it (`written`: "0.30" is 0.3 +- 0.005, "30.0"
    is +- 0.05, "30" +- 0.5), or as the number reads where the text is not known, and at least RELATIVE_FLOOR of it."""
    try:
        text = Decimal((written or "").strip().replace("_", ""))
        if float(text) != float(value):  # (text of another value: a record changed since it was read)
            raise ArithmeticError(written)
        exponent = text.as_tuple().exponent
    except (ArithmeticError, ValueError):  # (no text, or text that is no plain number: the number's own shortest form)
        exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
        if isinstance(exponent, int) and float(value).is_integer():
            exponent = min(exponent, 0)  # a whole number's last digit is its units (30 is not 3e1)
    half_digit = 0.5 * 10.0 ** exponent if isinstance(exponent, int) else 0.0
    return max(half_digit, RELATIVE_FLOOR * abs(value))


def nonnegative_least_squares(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """x >= 0 minimising |design @ x - target|: every set of free unknowns solved, the best feasible kept (exact;
    2^n sets, for the one to three unknowns of these fits)."""
    unknowns = design.shape[1]
    best, best_residual = np.zeros(unknowns), float(np.sum(target ** 2))
    for mask in range(1, 2 ** unknowns):
        free = [index for index in range(unknowns) if mask >> index & 1]
        solved = np.linalg.lstsq(design[:, free], target, rcond=None)[0]
        if np.all(solved >= 0):
            candidate = np.zeros(unknowns)
            candidate[free] = solved
            residual = float(np.sum((design @ candidate - target) ** 2))
            if residual < best_residual:
                best, best_residual = candidate, residual
    return best


def weighted_fit(design: np.ndarray, measured: np.ndarray, sigma: np.ndarray) -> LinearFit:
    """Bounded (>= 0) least squares of measured ~ design @ x, each row weighted by 1 / sigma."""
    weighted, target = design / sigma[:, None], measured / sigma
    solution = nonnegative_least_squares(weighted, target)
    freedom = len(measured) - design.shape[1]
    information = weighted.T @ weighted
    covariance = np.linalg.pinv(information)
    if freedom > 0:
        # Scaled by the residuals, and widened by Student's t: from a few points the scatter is itself uncertain,
        # and one sigma should still hold the truth about two times in three.
        chi_square = float(np.sum((target - weighted @ solution) ** 2)) / freedom
        from scipy.special import stdtrit  # (imported here: 0.6 s a command that fits nothing)

        covariance = covariance * max(1.0, chi_square) * float(stdtrit(freedom, ONE_SIGMA)) ** 2
    return LinearFit(solution, covariance, freedom == 0)


def inverse(coefficient: float, variance: float) -> Estimate | None:
    """An efficiency from its fitted reciprocal (first-order propagation)."""
    if coefficient <= 0:
        return None
    return Estimate(1 / coefficient, math.sqrt(max(variance, 0.0)) / coefficient ** 2)
