"""A local LLM as a judge of what a caption says: for each pair, which annotated differences the
caption states, which of its claims no reference supports, and, on a no-change pair, whether it
says nothing changed (:mod:`idc_toolkit.metrics.judge_columns` turns the answers into scores).

Every question is a yes / no question with a fixed prompt (:mod:`.prompts`, written out in
``docs/scoring.md``), answered greedily by any causal or chat model transformers loads (or an
OpenAI-compatible endpoint), batched, cached per pair on the run engine (:mod:`.run`).
"""

#: the folder under an evaluation's ``--out`` holding its judgements (a run of its own)
JUDGE_DIR = "judge"
#: the folder under ``idc-eval compare``'s ``--out`` holding each compared run's judgements
JUDGES_DIR = "judges"
