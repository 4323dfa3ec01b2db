"""Building: a raw release -> a Hub-ready dataset folder.

* :mod:`.args` — ``idc-build``'s options (:class:`BuildArgs`);
* :mod:`.builder` — the base every ``builders/<name>.py`` extends (config, card facts, records);
* :mod:`.pipeline` — ``idc-build`` on the run engine (fingerprint, parts, card, report);
* :mod:`.report` — every skipped, repaired or noted record;
* :mod:`.rawio` — raw JSON and image files, checked without decoding;
* :mod:`.hfcopy` — local copies of Hub-only releases (Emu Edit, MagicBrush).
"""

from .args import BuildArgs
from .builder import BuilderConfig, CardMeta, PairBuilder
from .pipeline import BuildResult, build_dataset
from .report import BuildReport

__all__ = ["BuildArgs", "BuilderConfig", "CardMeta", "PairBuilder", "BuildResult", "build_dataset", "BuildReport"]
