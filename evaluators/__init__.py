"""Evaluators: scoring any predictions file (:mod:`.predictions`, :mod:`.outputs`) and, as
they are added, model runners registered by name for ``idc-eval --model``."""
