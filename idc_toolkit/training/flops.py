"""The FLOPs of one pair's training step: forward, caption loss and backward through the recipe's
LoRA model, counted by ``torch.utils.flop_counter`` (``--dry-run`` prints it; MFU in
``benchmarks/train_speed.py`` rests on it).

Counted as :mod:`.estimate` measures memory, from ``config.json`` alone: on slices of the real
widths, one pair on the CPU. Two periods of every stack (a stack's first layer differs: its input
needs no gradient), then one more period of each stack in turn; each difference is that stack's
period, repeated to the real depth. ``tests/test_step_flops.py`` holds the result equal to
counting the whole model. Recomputation under gradient checkpointing is not counted: these are
the model's FLOPs, not the hardware's. (The Trainer's own ``total_flos``, 6 x parameters x the
elements of the main input, counts BLIP-2's pixels, not FLOPs: ``idc-train`` leaves it out.)
"""

from __future__ import annotations

from typing import Any, Optional

from .estimate import STACKS, base_config, probe_batch, prompt_tokens, slice_model, stack_periods


def step_pair_flops(recipe_cls, settings, facts) -> int:
    """FLOPs of one pair of an optimizer step of ``settings`` (its captions at
    ``settings.max_caption_tokens``), extrapolated from slices (see the module docstring)."""
    config = base_config(settings)
    period = stack_periods(config)
    depth = {s: getattr(getattr(config, a), f) for s, (a, f) in STACKS.items()}
    two = {stack: 2 for stack in STACKS}
    base = pair_flops(recipe_cls, settings, facts, two, config)
    return int(base + sum((pair_flops(recipe_cls, settings, facts, {**two, stack: 3}, config) - base)
                          * (depth[stack] - 2 * period[stack]) // period[stack] for stack in STACKS))


def pair_flops(recipe_cls, settings, facts, cut: Optional[dict[str, int]] = None, config: Any = None,
               dtype: Any = None) -> int:
    """FLOPs of one pair's forward, caption loss and backward through the model cut to ``cut``
    periods of each stack (default: the whole model); ``config``: the base's, where already read;
    ``dtype``: the slice's weights and images (float32 by default: the count is the same at any)."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from ..models.recipe import caption_loss_sum

    config = config if config is not None else base_config(settings)
    period = stack_periods(config)
    depths = {stack: cut[stack] * period[stack] for stack in STACKS} if cut else None
    dtype = dtype or torch.float32  # bfloat16 is emulated on CPUs without AVX512-BF16: 3x slower, same count
    net, config, recipe = slice_model(recipe_cls, settings, facts, config, getattr(transformers, recipe_cls.model_class),
                                      dtype, depths)
    inputs = probe_batch(recipe_cls, settings, config, dtype, prompt_tokens(recipe, settings))
    labels = inputs.pop("labels")
    with FlopCounterMode(display=False) as counter:
        caption_loss_sum(net(**inputs).logits, labels)[0].backward()
    return int(counter.get_total_flops())

