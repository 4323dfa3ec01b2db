"""The demo's base checkpoints: tiny BLIP-2 and InstructBLIP models pretrained on generated pairs.

A tiny model with a random vision side cannot learn to describe a change in the few minutes the
demo has: nothing in it sees the pair (the demo's earlier bases wrote one sentence for every
pair). The real recipes start from checkpoints pretrained on millions of images; the demo's
stand-ins are pretrained here, once, on pairs of the demo's generator drawn with other seeds
than any demo dataset (``PRETRAIN_SEED``), and shipped in the package (``bases/``), so
``idc-demo --with-model`` fine-tunes them with ``idc-train`` as a user fine-tunes a real base.

* BLIP-2 (OPT) reads BLIP2IDC's stacked pair (before on top). Its vision encoder is told the
  layout: position codes shared by the two halves, and one first-layer attention head that
  brings each patch the content of the same place in the other half (set by hand, as the
  comparison a pretrained encoder's features make easy); every weight is then trained.
* InstructBLIP (Llama) reads DAVIR's input: each image through the encoder, both token
  sequences to the Q-Former, the entity prompt (a random entity word, as the demo's random
  CLIP gives) before the caption.

Every weight of both is trained end to end, ``--steps`` steps of AdamW with a linear decay, on
the caption loss plus, while pretraining only, what changed: small heads on the mean query output
name the change type and the changed object's size, colour and shape (read from the first
template of its captions, which names them all); the heads are not saved.
``python -m idc_toolkit.demo.pretrain OUT`` rewrites them (seeded); the commands that made the
shipped ones, their cost and how they score are in ``bases/README.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .. import checks
from ..options import add_options, check_fields, cli_fields, from_namespace, help_of, option, with_fields
from .models import HIDDEN, blip2_base, instructblip_base
from .tokenizers import demo_vocabulary

#: the generator's seed for pretraining pairs (no demo dataset is drawn with it) and for checking them
PRETRAIN_SEED, CHECK_SEED = 101, 7
#: where the shipped bases live (package data)
BASES = Path(__file__).resolve().parent / "bases"
#: the pretraining steps of each shipped base
SHIPPED_STEPS = 9000


def generated_pairs(n_per_type: int, seed: int) -> list[tuple]:
    """``(before, after, captions, category)`` of ``n_per_type`` scenes per change type, each with its
    distractor-only twin, as the demo release draws them."""
    import numpy as np

    from .generator import CHANGE_TYPES, NO_CHANGE_TEMPLATES, make_scene

    rng = np.random.default_rng(seed)
    out = []
    for change_type in CHANGE_TYPES:
        for _ in range(n_per_type):
            before, after, nsc, captions, _ = make_scene(0, change_type, 160, 120, rng)
            out.append((before, after, captions, change_type))
            out.append((before, nsc, list(rng.permutation(NO_CHANGE_TEMPLATES)[:3]), "distractor"))
    return out


def attribute_values() -> dict[str, tuple[str, ...]]:
    """What the pretraining heads name (``none`` where a no-change pair has no object)."""
    from .generator import CHANGE_TYPES, COLORS, SHAPE_WORDS, SIZES

    return {"category": (*CHANGE_TYPES, "distractor"), "size": ("none", *SIZES), "color": ("none", *COLORS),
            "shape": ("none", *SHAPE_WORDS.values())}


def attribute_labels(captions: list[str], category: str) -> dict[str, int]:
    """The heads' targets of one pair: the first change template names size, colour (the old one)
    and shape; a no-change pair has none."""
    values = attribute_values()
    words = captions[0].split() if category != "distractor" else []
    out = {"category": values["category"].index(category)}
    for name in ("size", "color", "shape"):
        out[name] = next((values[name].index(w) for w in words if w in values[name][1:]), 0)
    return out


class BaseInPretraining:
    """How one base reads a pair and is asked for its caption: the recipe's own input and decoding
    (:class:`~idc_toolkit.models.blip2idc.Blip2IDCInputs`, :class:`~idc_toolkit.models.davir.DavirInputs`)
    and its label packing, so the pretrained base fits what idc-train and idc-eval give it."""

    def __init__(self, name: str, model, proc):
        from ..models.blip2idc import Blip2IDCInputs
        from ..models.davir import DavirInputs, pair_forward

        self.name, self.model, self.tok = name, model, proc.tokenizer
        if name == "davir":
            pair_forward(model.vision_model)
            self.inputs = DavirInputs(proc, num_entities=1, max_new_tokens=20)
        else:
            self.inputs = Blip2IDCInputs(proc, resize_blur=False, max_new_tokens=20)
        self.n_query, self.image_token = model.config.num_query_tokens, model.config.image_token_index
        #: DAVIR's prompt names an entity: a random noun, as the demo's random CLIP gives
        self.nouns = [w for w in demo_vocabulary() if w.isalpha() and w.islower()]

    @staticmethod
    def rows(pairs, entities: Optional[list[list[str]]] = None) -> list[dict]:
        return [{"pair_id": str(i), "before": p[0], "after": p[1], "entities": entities[i] if entities else []}
                for i, p in enumerate(pairs)]

    def pixels(self, pairs):
        return self.inputs.pixels(self.rows(pairs))

    def entities(self, rng: random.Random) -> list[str]:
        return [rng.choice(self.nouns)] if self.name == "davir" else []

    def batch(self, pixels, captions: list[str], entities: list[list[str]]):
        from ..models.davir import build_prompt
        from ..models.recipe import pack, pad_id

        prompts = [build_prompt(e, 1) for e in entities] if self.name == "davir" else [""] * len(captions)
        ids, mask, labels = pack([([self.image_token] * self.n_query + self.tok(prompt, add_special_tokens=True)["input_ids"],
                                   self.tok(caption, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id])
                                  for caption, prompt in zip(captions, prompts)], pad_id(self.tok))
        out = {"input_ids": ids, "attention_mask": mask, "pixel_values": pixels, "labels": labels}
        if self.name == "davir":
            out.update(self.inputs.qformer(prompts))
        return out

    def captions(self, pairs, entities: list[list[str]]) -> list[str]:
        self.model.eval()
        try:
            return self.inputs.decode(self.model, self.rows(pairs, entities))
        finally:
            self.model.train()


def pretrain(name: str, out: Path, steps: int, n_per_type: int = 300, seed: int = 0, lr: float = 1e-3,
             check_every: Optional[int] = None, aux_weight: float = 1.0, start: Optional[Path] = None, log=print) -> Path:
    """Pretrain the ``blip2idc`` (BLIP-2) or ``davir`` (InstructBLIP) stand-in and save it to ``out``;
    ``start``: continue from a base saved before (its pretraining record is kept, this run appended)."""
    import torch

    torch.manual_seed(seed)
    model, proc = blip2_base(seed) if name == "blip2idc" else instructblip_base(seed)
    earlier: list = []
    if start is not None:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(str(Path(start) / "model.safetensors")))
        record = json.loads((Path(start) / "pretraining.json").read_text())
        earlier = record if isinstance(record, list) else [record]
    base = BaseInPretraining(name, model, proc)
    heads = torch.nn.ModuleDict({k: torch.nn.Linear(HIDDEN, len(v)) for k, v in attribute_values().items()}
                                if aux_weight > 0 else {})
    rng = random.Random(seed)
    started = time.time()
    pairs = generated_pairs(n_per_type, PRETRAIN_SEED)
    check = generated_pairs(8, CHECK_SEED)
    pixels = base.pixels(pairs)
    targets = {k: torch.tensor([attribute_labels(p[2], p[3])[k] for p in pairs]) for k in heads}
    log(f"{name}: {len(pairs)} generated pairs (seed {PRETRAIN_SEED}), {steps} steps")
    opt = torch.optim.AdamW([*model.parameters(), *heads.parameters()], lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / steps)
    model.train()
    for step in range(1, steps + 1):
        idx = [rng.randrange(len(pairs)) for _ in range(32)]
        entities = [base.entities(rng) for _ in idx]
        output = model(**base.batch(pixels[idx], [rng.choice(pairs[i][2]) for i in idx], entities))
        loss = output.loss
        if heads:
            queries = output.qformer_outputs.last_hidden_state[:, :base.n_query].mean(1)
            aux = sum(torch.nn.functional.cross_entropy(head(queries), targets[k][idx]) for k, head in heads.items())
            loss = loss + aux_weight * aux
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        if check_every and (step % check_every == 0 or step == steps):
            got = []
            for k in range(0, len(check), 40):
                got += base.captions(check[k:k + 40], [base.entities(random.Random(k)) for _ in check[k:k + 40]])
            log(f"{name} step {step}: caption loss {output.loss.item():.3f}"
                + (f", heads {aux.item():.3f}" if heads else "") + ", "
                f"{len(set(got))} distinct captions of {len(got)}, "
                f"{time.time() - started:.0f} s")
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    this = {"steps": steps, "pairs": len(pairs), "generator_seed": PRETRAIN_SEED, "seed": seed, "lr": lr,
            "aux_weight": aux_weight, "threads": torch.get_num_threads(), "seconds": round(time.time() - started)}
    (out / "pretraining.json").write_text(json.dumps([*earlier, this] if earlier else this, indent=1) + "\n")
    return out


@dataclass(kw_only=True)
class PretrainArgs:
    """``python -m idc_toolkit.demo.pretrain [OUT]``: which bases to pretrain, and how."""

    out: str = option(str(BASES), "folder for blip2/ and instructblip/ (default: the shipped ones)")
    steps: int = option(SHIPPED_STEPS, f"AdamW steps of each base, on batches of 32 generated pairs (default: "
                                       f"{SHIPPED_STEPS}, as the shipped bases)", check=checks.positive_int)
    only: Optional[str] = option(None, "pretrain one of the two", choices=("blip2idc", "davir"))
    check_every: int = option(1000, "caption the check pairs every N steps (0: never)", check=checks.non_negative_int,
                              metavar="N")
    aux_weight: float = option(1.0, "weight of the what-changed heads' loss (0: captions only)",
                               check=checks.non_negative_float)
    lr: float = option(1e-3, "peak learning rate (decays linearly to 0)", check=checks.positive_float)
    start: Optional[str] = option(None, "continue from the base in this folder (blip2/ or instructblip/ under it)")

    def __post_init__(self) -> None:
        check_fields(self)


#: each base: the recipe it serves and its folder under ``out``
FOLDERS = {"blip2idc": "blip2", "davir": "instructblip"}


def pretrain_bases(args: Optional[PretrainArgs] = None, **fields: Any) -> list[Path]:
    """Pretrain the bases ``args`` names (both unless ``only``) into ``out``; returns their folders."""
    a = with_fields(PretrainArgs, args, **fields)
    return [pretrain(name, Path(a.out) / folder, a.steps, lr=a.lr, check_every=a.check_every, aux_weight=a.aux_weight,
                     start=Path(a.start) / folder if a.start else None)
            for name, folder in FOLDERS.items() if a.only in (None, name)]


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m idc_toolkit.demo.pretrain", description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", default=PretrainArgs().out, help=help_of(PretrainArgs, "out"))
    add_options(p, PretrainArgs, [name for name in cli_fields(PretrainArgs) if name != "out"])
    return p


def main(argv: Optional[list[str]] = None) -> int:
    pretrain_bases(from_namespace(PretrainArgs, make_parser().parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
