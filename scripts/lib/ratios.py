"""The one summary of a comparison's rounds: the median of each round's own ratio.

A ratio of two medians may pair one side's fast round with the other's slow one: the VMs seen here change
speed for minutes at a time (2-4x), and only figures taken close together in one round compare like with
like. So each round gives its own ratio and the summary is their median. A round without a positive figure
on either side, or one the caller leaves out (say, the machine changed speed during it), counts for
nothing, and the summary says which rounds were dropped and why."""
import math
import statistics
from dataclasses import dataclass


@dataclass
class RatioSummary:
    per_round: list  # each round's ratio; None where the round was dropped
    dropped: list  # (round number from 1, why)
    value: float | None  # the median of the kept rounds' ratios; None where no round was kept

    @property
    def rounds(self):
        return len(self.per_round)

    @property
    def kept(self):
        return self.rounds - len(self.dropped)

    def rounds_text(self, fmt="{:.3f}"):
        """Each round's ratio in order, "-" for a dropped round."""
        return " ".join("-" if x is None else fmt.format(x) for x in self.per_round)

    def kept_text(self):
        """'K of N rounds', and which were dropped and why."""
        text = f"{self.kept} of {self.rounds} rounds"
        if self.dropped:
            text += "; dropped: " + "; ".join(f"round {r} ({why})" for r, why in self.dropped)
        return text


def figures_text(xs, fmt="{:.1f}"):
    """Each round's figure in order, "-" where a round has none."""
    return " ".join("-" if not _figure(x) else fmt.format(x) for x in xs)


def _figure(x):
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def median_of_ratios(num, den, skip=None, names=("numerator", "denominator")):
    """num[i] / den[i] per round i, then their median. skip[i], where given and not None, is why round i is
    left out however its figures look; names say which side lacked a figure."""
    num, den = list(num), list(den)
    if len(num) != len(den):
        raise ValueError(f"{len(num)} {names[0]} figures against {len(den)} {names[1]} figures")
    skip = list(skip) if skip is not None else [None] * len(num)
    if len(skip) != len(num):
        raise ValueError(f"{len(skip)} skip entries for {len(num)} rounds")
    per_round, dropped = [], []
    for i, (a, b, why) in enumerate(zip(num, den, skip)):
        if why is None:
            for x, name in ((a, names[0]), (b, names[1])):
                if not _figure(x):
                    why = f"no {name} figure"
                    break
                if x <= 0:
                    why = f"{name} figure {x} is not positive"
                    break
        if why is not None:
            per_round.append(None)
            dropped.append((i + 1, why))
        else:
            per_round.append(a / b)
    kept = [x for x in per_round if x is not None]
    return RatioSummary(per_round, dropped, statistics.median(kept) if kept else None)
