"""What a general vision-language model is asked about a pair, and how one caption is read from
its answer: shared by ``idc-eval --model vlm`` and the lmms-eval task pack, so both ask and read
alike."""

from __future__ import annotations

import re
from typing import Optional

from .facts import DatasetFacts


#: the prompt of each dataset style (two images: before, after)
PROMPTS = {
    "scene": "The first image shows a scene before a change and the second image shows the same scene after it. "
             "In one sentence, describe what changed. If nothing changed, say so.",
    "edit": "The second image is an edited version of the first image. In one sentence, describe the edit that was made.",
    "remote_sensing": "The two images are satellite images of the same area taken at different times. "
                      "In one sentence, describe what changed on the ground. If nothing changed, say so.",
}
#: the same, for a single-image model shown the stacked pair
STACKED_PROMPTS = {
    "scene": "The top half of the image shows a scene before a change and the bottom half shows the same scene after it. "
             "In one sentence, describe what changed. If nothing changed, say so.",
    "edit": "The bottom half of the image is an edited version of the top half. In one sentence, describe the edit that was made.",
    "remote_sensing": "The top and bottom halves of the image are satellite images of the same area taken at different times. "
                      "In one sentence, describe what changed on the ground. If nothing changed, say so.",
}
#: datasets whose style is not their pair style

ANSWER_RULE = ("the first non-empty line of the answer; a leading 'Assistant:' / 'Answer:' label, list marker and "
               "surrounding quotes removed; cut after its first sentence (at '.', '!' or '?' followed by a space); trimmed")

_LABEL = re.compile(r"^\s*(?:assistant|answer|caption|output)\s*:\s*", re.I)
_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def clean_answer(text: str) -> str:
    """One caption from a model's answer (the rule: :data:`ANSWER_RULE`)."""
    line = next((ln for ln in str(text).splitlines() if ln.strip()), "")
    line = _MARKER.sub("", _LABEL.sub("", line)).strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    return _SENTENCE_END.split(line, maxsplit=1)[0].strip()


def preset_for(facts: DatasetFacts) -> Optional[str]:
    """The prompt preset a dataset's facts call for (``None``: the card does not say)."""
    if facts.prompt_preset:
        return facts.prompt_preset
    return facts.pair_style if facts.pair_style in ("scene", "edit") else None
