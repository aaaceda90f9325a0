"""How an engine fills a step, as data the loop reads (``--scheduler``).

Each engine file says which rule its scheduler follows (``[scheduler] batching`` in
``scenario/engines/NAME.toml``), so ``--scheduler`` takes any engine the folder holds, and
defaults to the ``--engine``'s own:

- ``mixed`` (vLLM v1): running decodes first, then prefill chunks in the same step (chunked
  prefill), up to a fixed token budget, decodes included: the sheet's
  ``max_num_batched_tokens`` wherever the sheet models the engine's chunking
  (``prefill_rides_decode_step``, the realistic terms: vLLM's scheduler takes the running
  requests' tokens first, then waiting prompts' chunks until the budget is spent, and the
  sheet's ``ttft_prefill_chunks`` counts chunks the same way), or ``--token-budget N``.
  In the seed's idealised scheduler (the roofline, ``prefill_rides_decode_step`` off) the
  chunk a step carries beside decodes is the sheet's ``roofline_chunk_tokens``: its
  ``chunk_size`` (the decodes' spare compute, threshold − B, or what it is pinned to) while
  that keeps up with the batch's prompts, else what ``max_num_batched_tokens`` leaves beside
  the decodes (at a batch near the threshold the seed's chunk is a token or none, and the
  batch would drain while its prompts queue); a step with no decodes takes up to
  ``max_context`` prompt tokens (a lone prompt prefills whole, as the sheet's ``ttft`` has
  it). With the sheet's ``chunked_prefill`` off, prompts prefill whole in steps of their
  own, before the decodes (vLLM V0).
- ``prefill-first`` (SGLang, ATOM): prefill batches and decode batches apart, prefill first
  (no mixed chunks), up to ``chunked-prefill-size`` tokens (``--token-budget``, else the
  sheet's ``max_num_batched_tokens`` under the realistic terms, else ``max_context``) a
  prefill batch; the engine file's ``chunked_prefill`` false: each prompt whole (ATOM).
- ``inflight`` (TensorRT-LLM): in-flight batching with a fixed ``max_num_tokens`` budget,
  decodes included (``--token-budget``, else the sheet's ``max_num_batched_tokens`` under
  the realistic terms, else concurrency + roofline_chunk_tokens), context chunking as the
  engine file says.
- ``preemption`` (each engine file's ``[scheduler]``): "recompute" (vLLM, SGLang, ATOM):
  a request is admitted once its prompt's KV fits, and when the pool is full the newest
  gives its blocks back and is recomputed later (:mod:`.preemption`); "none" (TensorRT-LLM's
  GUARANTEED_NO_EVICT capacity policy): a request is admitted only when the pool can hold
  its whole KV, prompt and output (its ``osl`` standing for its ``max_tokens``), reserved
  at admission, so no request is ever evicted and the pool never fills mid-run.
- ``static`` (no engine): a batch of up to ``max_num_seqs`` requests is prefilled whole, then
  decoded until its last request ends; the next batch starts only then.

``max_num_seqs`` is the sheet's ``concurrency`` (requests in flight), or ``--max-num-seqs``.
Under ``pp_steady_state`` a vLLM step with a token budget carries one batch of each of
``step_schedulers`` schedulers (V0's virtual engines), each with its own budget: up to that
many budgets of prompt chunks a step, one prompt's chunk at most one budget. Under
speculative decoding a decode takes k + 1 tokens of a fixed budget (its verify pass), as
vLLM v1's scheduler counts a running request's spec tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.scenario import engine_files

#: the scheduler that belongs to no engine
STATIC = "static"


def schedulers() -> list[str]:
    """What ``--scheduler`` takes: every engine the folder holds, and ``static``."""
    return [*engine_files.names(), STATIC]


def _rule(name: str) -> engine_files.Scheduling:
    found = engine_files.engine(name)
    if found.scheduling is None:
        raise InputError(f"{name} has no [scheduler] table in {found.path}: expected "
                         f"batching = {' | '.join(engine_files.BATCHING)}, chunked_prefill "
                         "and preemption", name="--scheduler")
    return found.scheduling


@dataclass(frozen=True)
class Policy:
    name: str
    mixed: bool  # decodes and prefill chunks in one step
    chunked: bool  # a prompt may be split over steps
    static: bool  # whole batches, admitted only when the last one is done
    with_decodes: int  # prefill tokens a step may add beside decodes (mixed)
    alone: int  # prefill tokens a step may take when it carries no decodes
    fixed: int  # > 0: a fixed budget, decodes included (overrides the two above)
    max_seqs: int
    #: schedulers whose batches one step carries (``step_schedulers``): each has its own
    #: budget, so a step takes up to ``lanes`` budgets, one prompt's chunk at most one
    lanes: int = 1
    decode_tokens: int = 1  # budget tokens a decode takes: spec_k + 1
    #: preemption "none": admission reserves the request's whole KV (prompt and output)
    reserve: bool = False

    def prefill_budget(self, decodes: int) -> int:
        if self.fixed:
            return max(0, self.lanes * self.fixed - decodes * self.decode_tokens)
        return self.lanes * (self.with_decodes if decodes else self.alone)

    def chunk_cap(self, decodes: int) -> int:
        """The most prompt tokens one request may take in a step with ``decodes``: one
        scheduler's budget when several share the step, else no cap beyond the step's."""
        if self.lanes == 1 or self.static:
            return 1 << 62
        return self.fixed or (self.with_decodes if decodes else self.alone)


def policy(name: str, sheet: Sheet, token_budget: int | None, max_seqs: int | None,
           ) -> Policy:
    m = sheet.magnitude
    seqs = max_seqs if max_seqs is not None else math.floor(m("concurrency"))
    if seqs < 1:
        raise InputError(f"max_num_seqs is {seqs}: the scenario's concurrency (or "
                         f"--max-num-seqs) must be at least 1", name="--max-num-seqs")
    chunk = max(1, math.ceil(m("roofline_chunk_tokens", "token")))
    context = max(1, math.ceil(m("max_context", "token")))
    budget = token_budget or _engine_budget(sheet)
    chunked = bool(m("chunked_prefill"))  # the mixed rule's: the sheet models its chunking
    per = round(m("spec_k")) + 1
    if name == STATIC:
        return Policy(name, False, False, True, 0, budget or (1 << 40), 0, seqs, 1, per)
    rule = _rule(name)
    reserve = rule.preemption == "none"
    if rule.batching == "mixed":
        # V0's virtual engines each hold the engine's own budget (none in the seed's scheduler)
        lanes = max(1, math.floor(m("step_schedulers"))) if budget and chunked else 1
        return Policy(name, chunked, chunked, False, chunk, budget or context,
                      budget if chunked else 0, seqs, lanes, per, reserve)
    if rule.batching == "prefill-first":
        return Policy(name, False, rule.chunked_prefill, False, 0, budget or context, 0, seqs,
                      1, per, reserve)
    return Policy(name, True, rule.chunked_prefill, False, 0, 0, budget or seqs * per + chunk,
                  seqs, 1, per, reserve)


def _engine_budget(sheet: Sheet) -> int:
    """The engine's own token budget, ``max_num_batched_tokens``, where the sheet models the
    engine's chunking (``prefill_rides_decode_step``: its ``ttft_prefill_chunks`` split a
    prompt by that budget, less the running decodes); 0 in the seed's idealised scheduler,
    whose chunk is ``roofline_chunk_tokens`` (threshold − B, while it keeps up) beside
    decodes."""
    names = sheet.names
    if "prefill_rides_decode_step" not in names or "max_num_batched_tokens" not in names \
            or not sheet.magnitude("prefill_rides_decode_step"):
        return 0
    return max(1, math.floor(sheet.magnitude("max_num_batched_tokens", "token")))
