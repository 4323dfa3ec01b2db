"""Syned-style augmentation (BLIP2IDC): edited pairs with paraphrased references.

* :mod:`.editor` — InstructPix2Pix edits with stored seeds (:func:`reproduce_edits`);
* :mod:`.paraphrase` — chat-LLM paraphrases, cleaned and retried;
* :mod:`.clip_filter` — the optional CLIP directional filter;
* :mod:`.args` — ``idc-augment``'s options (:class:`AugmentArgs`: recipe, models, run);
* :mod:`.pipeline` — ``idc-augment`` on the run engine.
"""

from .editor import Editor, edit_seed, editor_input, reproduce_edits
from .args import AugmentArgs, AugmentConfig, Models
from .pipeline import AugmentTask, augment_dataset

__all__ = ["Editor", "edit_seed", "editor_input", "reproduce_edits", "AugmentArgs", "AugmentConfig", "AugmentTask", "Models",
           "augment_dataset"]
