"""The judge's four questions, fixed: their text is part of every judged run's fingerprint
(:data:`PROMPT_SHA`) and is written out in ``docs/scoring.md`` from here. Each is answered
yes or no; a model's answer is the likelier of the two as the first token of its reply."""

from __future__ import annotations

import hashlib

#: a caption states one annotated difference (recall)
STATED = """Two images of the same scene were compared. People annotated this difference between them:
{difference}

A caption written for the same two images says:
{caption}

Does the caption state this difference, in any words? Answer yes or no."""

#: one claim of a caption is supported by the references (precision, hallucination)
SUPPORTED = """Two images of the same scene were compared. People described the difference between them as follows:
{references}

A caption written for the same two images claims:
{claim}

Is this claim supported by what the people described? Answer yes or no."""

#: a caption says nothing changed (no-change specificity)
NO_CHANGE = """A caption written for two images of the same scene says:
{caption}

Does the caption say that nothing changed between the two images? Answer yes or no."""

#: the captions of A -> B and of B -> A describe inverse changes (reversibility, C3-Bench)
INVERSE = """Two images A and B of the same scene were compared. A caption of what changed from A to B says:
{forward}

A caption of what changed from B to A says:
{backward}

Do the two captions describe the same change, the second undoing the first (added / removed, red to blue / blue to red), or both that nothing changed? Answer yes or no."""

PROMPTS = {"stated": STATED, "supported": SUPPORTED, "no_change": NO_CHANGE, "inverse": INVERSE}
PROMPT_SHA = hashlib.sha256("\n\n".join(f"{k}\n{v}" for k, v in PROMPTS.items()).encode()).hexdigest()[:16]


def render(kind: str, **fields: str) -> str:
    return PROMPTS[kind].format(**fields)
