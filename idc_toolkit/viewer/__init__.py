"""``idc-view``: look at the data. A static pair browser for datasets and evaluation runs
(:mod:`.site`) and qualitative-example figures for papers (:mod:`.figure`)."""
