"""Scoring a predictions file: reading predictions and references (:mod:`.predictions`) and
writing ``metrics.json`` / ``metrics.md`` / ``per_pair.csv`` / ``by_category.png``
(:mod:`.outputs`). Model runners live in :mod:`idc_toolkit.models`."""
