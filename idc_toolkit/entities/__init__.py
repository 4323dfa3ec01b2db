"""Change entities: what changed, as phrases (spaCy) retrieved from the images (open_clip).

* :mod:`.phrases` — phrase strategies (``davir``, ``cheer``, ``rdd``) and the vocabulary;
* :mod:`.retrieval` — open_clip scoring and the retrieval strategies (``davir``, ``cheer``);
* :mod:`.params` — the pass's settings and run options (the command line is derived from them);
* :mod:`.column` — ``idc-precompute entities``: the entity columns of a dataset.
"""

from .column import EntityColumns, add_change_entities
from .params import EntitiesArgs, EntityParams
from .phrases import PHRASE_STRATEGIES, build_vocabulary, extract_phrases, load_spacy, rdd_texts, verb_phrases
from .retrieval import RETRIEVAL_STRATEGIES, ClipScorer, retrieve, soft_masked

__all__ = ["EntityColumns", "EntitiesArgs", "EntityParams", "add_change_entities", "PHRASE_STRATEGIES", "build_vocabulary", "extract_phrases",
           "load_spacy", "rdd_texts", "verb_phrases", "RETRIEVAL_STRATEGIES", "ClipScorer", "retrieve", "soft_masked"]
