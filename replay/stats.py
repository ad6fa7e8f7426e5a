"""The statistics behind ``replay report``, ``diff``, ``gate``, ``plan`` and ``noise``.

Pure functions on counts and per-case values, stdlib only, checked against
``scipy.stats`` and ``statsmodels`` in the tests and by seeded simulation in
``bench/stats.py``. The unit is the case: suite intervals and paired
comparisons resample cases, never trials (README, "Statistics").

```python
from replay.stats import case_interval, paired_interval, suite_interval

suite_interval([1.0, 0.5, 0.75, 0.0, 1.0])          # the mean over these cases, 95%
paired_interval([1, 0.5, 1, 0.25], [1, 0.25, 0.75, 0])  # candidate - baseline, paired
case_interval(c=6, n=8, k=4)                        # one case's pass^4
```
"""

from .results import (
    Interval,
    benjamini_hochberg,
    case_interval,
    clustered_se,
    detectable,
    fisher_exact,
    naive_se,
    paired_interval,
    suite_interval,
    trial_variance,
    wilson_interval,
)

__all__ = [
    "Interval",
    "benjamini_hochberg",
    "case_interval",
    "clustered_se",
    "detectable",
    "fisher_exact",
    "naive_se",
    "paired_interval",
    "suite_interval",
    "trial_variance",
    "wilson_interval",
]
