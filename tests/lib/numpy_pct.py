"""numpy_pct.py - the one percentile of the Python checkers: numpy's linear rule, as
userspace/base/stats.h has it (written apart from it, so a check does not read latscope's own
figure back). Import with tests/lib on sys.path."""


def pct(values, q, empty=0.0):
    """The q-th percentile (0-100) of values, in any order; `empty` when there are none."""
    v = sorted(values)
    if not v:
        return empty
    at = (len(v) - 1) * q / 100.0
    lo = int(at)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (at - lo)
