"""``python -m idc_toolkit.demo.stand_ins OUT``: the tiny random stand-ins for the checkpoints the
docs' examples name (BLIP-2, InstructBLIP, Qwen2-VL, a chat LM, InstructPix2Pix, SAM, open_clip, two
LoRA adapters), so every example runs as written after ``idc-demo``; nothing is downloaded and
their captions mean nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from .. import checks
from ..options import add_options, check_fields, cli_fields, from_namespace, help_of, option, required, with_fields
from .tiny import (blip2idc_targets, davir_targets, save_lora_adapter, save_tiny_blip2, save_tiny_chat_lm,
                   save_tiny_instruct_pix2pix, save_tiny_instructblip)


#: what ``python -m idc_toolkit.demo.stand_ins OUT`` writes: name -> what it stands in for
STAND_INS = {
    "blip2": "BLIP-2 OPT (Salesforce/blip2-opt-2.7b)",
    "blip2idc_adapter": "a BLIP2IDC LoRA adapter in the released peft 0.5 format",
    "instructblip": "InstructBLIP-Vicuna (Salesforce/instructblip-vicuna-7b)",
    "davir_adapter": "a DAVIR LoRA adapter",
    "qwen2_vl": "Qwen2-VL (Qwen/Qwen2-VL-2B-Instruct)",
    "chat": "a chat LM paraphraser (meta-llama/Llama-2-7b-chat-hf)",
    "instruct_pix2pix": "InstructPix2Pix (an InstructPix2Pix-MagicBrush folder)",
    "sam_tiny.pth": "a Segment Anything checkpoint (sam_vit_h_4b8939.pth; --sam-type tiny)",
    "tiny-clip.json": "an open_clip model config (ViT-L-14; --clip-config, --random-weights)",
}


@dataclass(kw_only=True)
class StandInsArgs:
    """``python -m idc_toolkit.demo.stand_ins OUT``: where the stand-ins go and their seed."""

    out: Union[str, Path] = required("folder to write them into (kept ones are not rewritten)")
    seed: int = option(0, "seed of their random weights", check=checks.seed)

    def __post_init__(self) -> None:
        check_fields(self)


def save_stand_ins(out: Optional[Path | str] = None, args: Optional[StandInsArgs] = None, **fields: Any) -> dict[str, Path]:
    """Every tiny random stand-in the docs' examples name, under ``out`` (else ``args.out``); one
    already there is kept (a rerun writes only what is missing). The options are :class:`StandInsArgs`,
    given as one or field by field."""
    from importlib import resources

    args = with_fields(StandInsArgs, args, **fields, **({} if out is None else {"out": out}))
    out, seed = Path(args.out), args.seed
    out.mkdir(parents=True, exist_ok=True)

    def blip2_adapter(folder: Path) -> None:
        from transformers import Blip2ForConditionalGeneration

        model = Blip2ForConditionalGeneration.from_pretrained(out / "blip2")
        save_lora_adapter(model, folder, blip2idc_targets(model.config.qformer_config.num_hidden_layers),
                          old_format=True, base_name=str((out / "blip2").resolve()))

    def davir_adapter(folder: Path) -> None:
        from transformers import InstructBlipForConditionalGeneration

        model = InstructBlipForConditionalGeneration.from_pretrained(out / "instructblip")
        save_lora_adapter(model, folder, davir_targets(), base_name=str((out / "instructblip").resolve()))

    def sam(path: Path) -> None:
        import torch

        from ..masks.sam import build_tiny_sam

        torch.save(build_tiny_sam().state_dict(), path)

    def clip(path: Path) -> None:
        path.write_text(resources.files("idc_toolkit.demo").joinpath("idc-demo-tiny-clip.json").read_text())

    def vlm(folder: Path) -> None:
        from .tiny_vlm import save_tiny_vlm

        save_tiny_vlm("qwen2_vl", folder, seed=seed)

    makers = {"blip2": lambda f: save_tiny_blip2(f, seed=seed), "blip2idc_adapter": blip2_adapter,
              "instructblip": lambda f: save_tiny_instructblip(f, seed=seed), "davir_adapter": davir_adapter,
              "qwen2_vl": vlm, "chat": lambda f: save_tiny_chat_lm(f, seed=seed),
              "instruct_pix2pix": lambda f: save_tiny_instruct_pix2pix(f, seed=seed), "sam_tiny.pth": sam,
              "tiny-clip.json": clip}
    written = {}
    for name, what in STAND_INS.items():
        path = out / name
        if not path.exists():
            partial = path.with_name(path.name + ".partial")
            makers[name](partial)
            partial.rename(path)  # a kill leaves no folder that looks finished
        print(f"{path}: {what} (tiny, random weights)")
        written[name] = path
    return written


def make_parser():
    import argparse

    p = argparse.ArgumentParser(prog="python -m idc_toolkit.demo.stand_ins",
                                description="Write tiny random stand-ins for the checkpoints the docs' examples name "
                                            "(no download; their captions mean nothing: they show the route).")
    p.add_argument("out", help=help_of(StandInsArgs, "out"))
    add_options(p, StandInsArgs, [name for name in cli_fields(StandInsArgs) if name != "out"])
    return p


def main(argv: list[str] | None = None) -> int:
    args = from_namespace(StandInsArgs, make_parser().parse_args(argv))
    from ..devices import quiet_model_loading

    quiet_model_loading("transformers", "diffusers")  # a loading or "Writing model shards" bar per model says nothing here
    save_stand_ins(args=args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
