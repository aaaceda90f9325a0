"""The formula language: parsed with :mod:`ast`, checked against an allowlist, never eval'd.

A formula is one expression over cell names::

    peak_flops * weight_bytes / (2 * FLOP / token * hbm_bandwidth)
    max(0, concurrency * (isl + osl) - osl * compute_bound_threshold)
    (1 - spec_alpha ** (spec_k + 1)) / (1 - spec_alpha)
    prefill_time if chunked_prefill else 0 * s

Allowed: numbers, ``"3.35 TB/s"`` quantity strings, cell names, unit names (FLOP, token, B,
s, ms, GB … — dimensions of information, time, FLOP, token, request), ``+ - * / **``,
comparisons, ``and or not``, ``a if c else b`` and the functions in :data:`FUNCTIONS`: what
the operator table (:mod:`.ops`) holds. Anything else is a
:class:`~perfgraph.errors.FormulaSyntaxError` (:mod:`.validate`). A run of ``+ -`` (or
``* /``) counts as one level and is walked with a loop, so ``a + b + c + …`` may have as many
terms as fit.

Four walks of the tree consult the one table: the validator (which also yields the names a
formula reads, the graph's edges), the dimension walker (:mod:`.dims`, checked against the
cell's declared unit when a sheet loads), the compiler (:mod:`.compile`: a closure over
canonical magnitudes, floats or whole NumPy columns for a sweep) and the renderer
(:mod:`.render`, for ``explain``). :mod:`.parse` holds :class:`Formula`, which runs them.
"""

from perfgraph.engine.formula.compile import ARITHMETIC, failure
from perfgraph.engine.formula.ops import FUNCTIONS, Env, Fn, Function, Op, Value
from perfgraph.engine.formula.parse import Formula, check_names, parse
from perfgraph.engine.formula.validate import MAX_DEPTH, MAX_EXPONENT, MAX_LENGTH

__all__ = ["ARITHMETIC", "FUNCTIONS", "MAX_DEPTH", "MAX_EXPONENT", "MAX_LENGTH", "Env", "Fn",
           "Formula", "Function", "Op", "Value", "check_names", "failure", "parse"]
