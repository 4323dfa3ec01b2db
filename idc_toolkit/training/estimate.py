"""``idc-train --dry-run``: what a run needs, from the base model's configuration alone.

The model is built on PyTorch's ``meta`` device (shapes, no storage) and wrapped with the
recipe's LoRA configuration by ``peft``, so parameter counts — total and trainable, per
module group — are exact, and nothing but ``config.json`` is read (or downloaded).

The memory of one optimizer step is the sum of four terms, each shown:

* frozen weights: every base parameter at the dtype the base is loaded in;
* LoRA state: each trainable parameter in float32 with its gradient and AdamW's two moments
  (16 bytes);
* activations: the bytes autograd saves for the backward pass, **measured** on a slice of the
  real model rather than modelled: the base is built at its real widths with three periods of
  each stack (ViT and LLM layers, Q-Former cross-attention periods of two layers),
  wrapped with the recipe's LoRA and hooks (:meth:`~idc_toolkit.models.recipe.Recipe.prepare`: DAVIR's two-image
  encoder and its FAC capture, which makes the final ViT layer's attention eager), and run forward on one
  pair of the run's token layout under the precision the Trainer uses (autocast to bf16 / fp16
  on a GPU) with :func:`torch.autograd.graph.saved_tensors_hooks` summing every saved storage
  that is not a parameter. The middle period gives that stack's bytes per layer (the first saves
  less, its input needing no gradient; the last is the one a recipe may change: DAVIR's eager
  final ViT layer); the total is extrapolated to the real depths and batch (every saved tensor
  grows linearly in both). With gradient checkpointing the same slices are measured with
  checkpointing on (each layer keeps its input) and one layer's full activations are added (the
  layer the backward pass recomputes). The slice's weights are allocated, never initialised;
* the loss: the logits the LLM returns and the float32 log-probabilities the caption loss
  saves (measured in the same pass).

Measured against an H100 (tests/test_real_layouts.py holds the figures): within 10% for
BLIP2IDC on BLIP-2 OPT-2.7B and DAVIR on InstructBLIP-Vicuna-7B, with and without checkpointing.
Allocator fragmentation and the CUDA context (~0.5-1 GiB) come on top.

``--memory-budget GIB``: the activations grow linearly in the batch, so the largest micro-batch
that fits follows from the same terms (:meth:`Estimate.largest_batch`); the run then trains its
effective batch as the largest divisor of it that fits, the rest accumulated
(:func:`fit_budget`; the accumulation is exact, docs/training.md).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from unittest import mock
from typing import Any

GROUPS = ("vision_model", "qformer", "language_model")
#: (config attribute, depth field) of each stack of a BLIP-2-family model
STACKS = {"vision_model": ("vision_config", "num_hidden_layers"), "qformer": ("qformer_config", "num_hidden_layers"),
          "language_model": ("text_config", "num_hidden_layers")}


@dataclass(frozen=True)
class Estimate:
    parameters: dict[str, int]  #: per module group (``vision_model``, ``qformer``, ``language_model``, ``other``)
    trainable: dict[str, int]
    weight_bytes: int
    lora_state_bytes: int
    activation_bytes: int
    dtype: str
    per_layer_bytes: dict[str, int] | None = None  #: activations each layer of a stack saves, at the run's batch
    batch_size: int = 1  #: the micro-batch the activations are for
    budget_bytes: int | None = None  #: ``--memory-budget``: what :meth:`largest_batch` fits in
    effective_batch: int = 1  #: the pairs of one optimizer step (batch x accumulation)
    pair_flops: int | None = None  #: FLOPs of one pair of a step (:mod:`.flops`; ``--dry-run`` counts them)

    @property
    def total_bytes(self) -> int:
        return self.weight_bytes + self.lora_state_bytes + self.activation_bytes

    @property
    def pair_bytes(self) -> float:
        """Activations of one pair: every saved tensor grows linearly with the batch."""
        return self.activation_bytes / max(self.batch_size, 1)

    def total_at(self, batch: int) -> int:
        """The estimate of one step at micro-batch ``batch``."""
        return self.weight_bytes + self.lora_state_bytes + int(self.pair_bytes * batch)

    def largest_batch(self, budget_bytes: int | None = None) -> int:
        """The largest micro-batch whose estimate fits in ``budget_bytes`` (default: the run's budget); 0: none does."""
        budget = self.budget_bytes if budget_bytes is None else budget_bytes
        if budget is None:
            raise ValueError("no memory budget")
        room = budget - self.weight_bytes - self.lora_state_bytes
        return max(0, int(room // self.pair_bytes)) if self.pair_bytes > 0 else 0

    def split(self, budget_bytes: int | None = None) -> tuple[int, int]:
        """``(micro-batch, accumulation steps)`` for the run's effective batch under the budget: the
        largest divisor of the effective batch that fits, the rest accumulated; ``(0, 0)``: not even one pair fits."""
        fits = self.largest_batch(budget_bytes)
        micro = max((d for d in range(1, self.effective_batch + 1) if self.effective_batch % d == 0 and d <= fits), default=0)
        return (micro, self.effective_batch // micro) if micro else (0, 0)

    def render(self) -> str:
        gib = 1024 ** 3
        lines = ["| module group | parameters | trainable (LoRA) |", "| --- | ---: | ---: |"]
        for g in self.parameters:
            lines.append(f"| {g} | {self.parameters[g]:,} | {self.trainable.get(g, 0):,} |")
        lines.append(f"| total | {sum(self.parameters.values()):,} | {sum(self.trainable.values()):,} |")
        lines += ["", f"Estimated memory of one optimizer step (base in {self.dtype}):",
                  f"- frozen weights: {self.weight_bytes / gib:.2f} GiB",
                  f"- LoRA weights, gradients, AdamW moments (float32): {self.lora_state_bytes / gib:.3f} GiB",
                  f"- activations and loss (saved for the backward pass, measured on a slice of the model): "
                  f"{self.activation_bytes / gib:.2f} GiB"]
        for stack, n in (self.per_layer_bytes or {}).items():
            lines.append(f"  - {stack}: {n / 2 ** 20:.1f} MiB a layer")
        lines.append(f"- total: {self.total_bytes / gib:.2f} GiB (allocator overhead and the CUDA context, ~0.5-1 GiB, "
                     "come on top)")
        if self.pair_flops is not None:
            lines.append(f"- compute: {_flops(self.pair_flops)} a pair, {_flops(self.pair_flops * self.effective_batch)} an "
                         "optimizer step (forward, caption loss and backward, captions at their longest; counted by torch's "
                         "FLOP counter, checkpointing's recomputation not included)")
        if self.budget_bytes is not None:
            micro, accum = self.split()
            lines.append(f"- in {self.budget_bytes / gib:.1f} GiB: batches up to {self.largest_batch()} pairs fit; the effective "
                         f"batch of {self.effective_batch} trains as " + (f"--batch-size {micro} --grad-accum {accum}" if micro
                                                                          else "nothing: not one pair fits"))
        return "\n".join(lines)


def base_config(settings) -> Any:
    """The base model's configuration (its ``config.json`` alone, at ``settings.revision``)."""
    from transformers import AutoConfig

    kwargs: dict[str, Any] = {"revision": settings.revision} if settings.revision else {}
    return AutoConfig.from_pretrained(settings.base_model, **kwargs)


def _flops(n: int) -> str:
    """``n`` FLOPs in the largest unit that keeps a whole number in front (1.72 TFLOP, 61.5 MFLOP)."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} FLOP"


def _group(name: str) -> str:
    for g in GROUPS:
        if f"{g}." in name or name.startswith(g):
            return g
    return "other"


def estimate(recipe_cls, settings, facts, device: str, budget_gib: float | None = None) -> Estimate:
    """Parameter counts and the memory estimate of ``settings`` on ``device`` (see module
    docstring); ``budget_gib``: also what fits in that many GiB (:meth:`Estimate.split`)."""
    import torch
    import transformers
    from ..models.adapters import wrap_lora

    from ..devices import resolve_dtype

    config = base_config(settings)
    model_class = getattr(transformers, recipe_cls.model_class)
    with torch.device("meta"):
        model = model_class(config)
    recipe = recipe_cls(settings, facts)
    net = wrap_lora(model, recipe.lora_config(model))
    parameters: dict[str, int] = {g: 0 for g in (*GROUPS, "other")}
    trainable: dict[str, int] = {g: 0 for g in parameters}
    for name, p in net.named_parameters():
        g = _group(name)
        if p.requires_grad:
            trainable[g] += p.numel()
        else:
            parameters[g] += p.numel()
    for g in trainable:
        parameters[g] += trainable[g]
    dtype = resolve_dtype(settings.dtype, device)
    bytes_per = torch.tensor([], dtype=dtype).element_size()
    weight_bytes = sum(parameters.values()) * bytes_per - sum(trainable.values()) * bytes_per
    lora_state = sum(trainable.values()) * 16
    activations, per_layer = activation_bytes(recipe_cls, settings, facts, config, model_class, dtype,
                                              autocast=device.startswith("cuda") and dtype != torch.float32)
    return Estimate({g: n for g, n in parameters.items() if n}, {g: n for g, n in trainable.items() if n},
                    weight_bytes, lora_state, activations, str(dtype).replace("torch.", ""), per_layer,
                    batch_size=settings.batch_size, budget_bytes=None if budget_gib is None else int(budget_gib * 1024 ** 3),
                    effective_batch=settings.batch_size * settings.grad_accum)


def fit_budget(settings, guess: Estimate):
    """``settings`` with the micro-batch and accumulation :meth:`Estimate.split` picks under the
    run's ``--memory-budget``: the same effective batch, and the same training, since the loss is
    divided by the target tokens of the whole optimizer step."""
    from ..errors import IDCError

    micro, accum = guess.split()
    if not micro:
        gib = 1024 ** 3
        raise IDCError(f"--memory-budget {guess.budget_bytes / gib:g}: not one pair fits (frozen weights and LoRA state "
                       f"{(guess.weight_bytes + guess.lora_state_bytes) / gib:.1f} GiB, {guess.pair_bytes / gib:.2f} GiB a pair; "
                       "try --gradient-checkpointing)")
    return settings.replace(batch_size=micro, grad_accum=accum)


_MEASURED: dict[tuple, tuple[int, dict[str, list[int]]]] = {}


def activation_bytes(recipe_cls, settings, facts, config, model_class, dtype, autocast: bool) -> tuple[int, dict[str, int]]:
    """``(bytes, per-layer bytes by stack)`` autograd saves for one optimizer micro-batch of
    ``settings.batch_size`` pairs, measured on a slice of the model (see the module docstring).
    The slice has three periods of each stack (one layer; a Q-Former cross-attention period); the
    second period's bytes are the per-layer figure the real depth repeats (the first layer of a
    stack saves less: its input needs no gradient; the last may differ where a recipe changes it)."""
    period = stack_periods(config)
    depth = {s: getattr(getattr(config, a), f) for s, (a, f) in STACKS.items()}
    # three periods: the first (its input needs no gradient), a steady one that the real depth
    # repeats, and the last, which a recipe may change (DAVIR's eager final ViT layer): each once
    def total(checkpointing: bool) -> tuple[float, dict[str, float]]:
        # checkpointed: the two-period slice, whose estimate the H100's peak holds within 10%
        cut = {s: min((2 if checkpointing else 3) * period[s], depth[s]) for s in STACKS}
        fields = repr(sorted((k, v) for k, v in settings.record().items() if k != "gradient_checkpointing"))
        key = (recipe_cls.name, config.to_json_string(), fields, str(dtype), autocast, repr(sorted(cut.items())), checkpointing)
        if key not in _MEASURED:  # the plain slice serves the checkpointed estimate too
            _MEASURED[key] = _saved_bytes(recipe_cls, settings, facts, config, model_class, dtype, autocast, cut, checkpointing)
        other, layers = _MEASURED[key]
        middle = {s: layers[s][period[s]:2 * period[s]] if cut[s] >= 3 * period[s] else layers[s][-period[s]:] for s in STACKS}
        steady = {s: sum(middle[s]) / period[s] for s in STACKS}
        return other + sum(sum(layers[s]) + steady[s] * (depth[s] - cut[s]) for s in STACKS), steady

    pair, layer = total(False)
    if settings.gradient_checkpointing:  # the layers keep what checkpointing keeps; backward recomputes one at a time
        pair = total(True)[0] + max(layer.values())
    b = settings.batch_size
    return int(pair * b), {s: int(v * b) for s, v in layer.items()}


def stack_periods(config) -> dict[str, int]:
    """Layers each stack repeats: one, or a Q-Former's cross-attention period."""
    return {"vision_model": 1, "language_model": 1,
            "qformer": int(getattr(config.qformer_config, "cross_attention_frequency", 1) or 1)}


def _layers(net, stack: str, n: int) -> list:
    """The ``n`` transformer layers of ``stack`` (the ModuleList of that length under it); refused in
    one line where there is none, rather than counting the stack as free."""
    import torch

    for name, module in net.named_modules():
        if stack in name and isinstance(module, torch.nn.ModuleList) and len(module) == n:
            return list(module)
    from ..errors import IDCError

    raise IDCError(f"--dry-run: no list of {n} layers under {stack!r} in {type(net).__name__}; its memory cannot be measured")


def _saved_bytes(recipe_cls, settings, facts, config, model_class, dtype, autocast: bool,
                 depths: dict[str, int], checkpointing: bool) -> tuple[int, dict[str, list[int]]]:
    """What one pair's forward and caption loss keep for the backward pass on ``config`` cut to
    ``depths`` layers per stack: ``(bytes outside the stacks' layers, bytes of each layer of each
    stack)``. A layer's bytes are what autograd saves inside it plus what it returns besides its
    hidden state that nothing saved (attention maps a recipe captures: alive until its encoder
    returns). Parameters and buffers are not counted: they are the weights."""
    import torch

    from ..models.recipe import caption_loss_sum

    net, cut, recipe = slice_model(recipe_cls, settings, facts, config, model_class, dtype, depths)
    if checkpointing:
        # the name newer transformers use, else the older one
        (getattr(net, "activation_checkpointing_enable", None) or net.gradient_checkpointing_enable)()
        net.enable_input_require_grads()
    batch = probe_batch(recipe_cls, settings, cut, dtype, prompt_tokens(recipe, settings))
    weights = {t.untyped_storage().data_ptr() for t in (*net.parameters(), *net.buffers())}
    where: list = ["other"]
    other = [0]
    per_layer = {s: [0] * depths[s] for s in STACKS}
    seen: set[int] = set()
    alive = []  # every saved tensor is held until counted, so no address is reused and counted twice or lost

    def pack(t):
        count(t)
        return t

    def count(t) -> None:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            add(storage.nbytes())
            alive.append(t)

    def add(n: int) -> None:
        if where[-1] == "other":
            other[0] += n
        else:
            per_layer[where[-1][0]][where[-1][1]] += n

    def leave(module, args, output) -> None:
        extra = output[1:] if isinstance(output, tuple) else ()
        for t in extra:  # returned attention maps: alive while the encoder runs, whether saved or not
            if isinstance(t, torch.Tensor):
                count(t)
        where.pop()

    handles = []
    for stack in STACKS:
        for index, layer in enumerate(_layers(net, stack, depths[stack])):
            handles.append(layer.register_forward_pre_hook(lambda *a, key=(stack, index): where.append(key)))
            handles.append(layer.register_forward_hook(leave))
    labels = batch.pop("labels")
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fused_attention(q, k, v, *args, **kwargs):
        """What a GPU's flash / memory-efficient attention keeps for its backward: q, k, v, the
        output and a float32 log-sum-exp (the CPU's kernels for masked attention keep the whole
        attention matrix instead), counted inside checkpointed layers too: so counted, the
        checkpointed estimate is 5% under the H100's peak; taken as keeping its input alone,
        a checkpointed layer made it 17% under (tests/test_real_layouts.py holds 10%)."""
        with torch.no_grad():
            out = sdpa(q, k, v, *args, **kwargs)
        for t in (q, k, v, out):
            count(t)
        add(out[..., 0].numel() * 4)  # the log-sum-exp
        return out.requires_grad_(q.requires_grad or k.requires_grad or v.requires_grad)

    softmax = torch.nn.functional.softmax
    linear = _shape_only_linear(dtype if autocast else None)

    def float32_softmax(x, dim=None, _stacklevel=3, dtype=None):
        """CUDA's autocast computes softmax in float32 (the eager attention's probabilities); the CPU's does not."""
        return softmax(x, dim=dim, dtype=torch.float32 if autocast and dtype is None else dtype)

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                mock.patch("torch.nn.functional.scaled_dot_product_attention", fused_attention), \
                mock.patch("torch.nn.functional.softmax", float32_softmax), \
                mock.patch("torch.nn.functional.linear", linear), \
                torch.autocast("cpu", dtype=dtype, enabled=autocast):
            out = net(**batch)
            caption_loss_sum(out.logits, labels)
    finally:
        for h in handles:
            h.remove()
    return other[0] + out.logits.untyped_storage().nbytes(), per_layer


def slice_model(recipe_cls, settings, facts, config, model_class, dtype, depths: dict[str, int] | None = None):
    """``(net, config, recipe)``: the recipe's LoRA model (its hooks prepared, in training mode) on
    ``config`` cut to ``depths`` layers per stack (``None``: whole), its weights allocated at
    ``dtype`` and never initialised (buffers are): only sizes matter to what is measured on it."""
    import torch
    from transformers.initialization import no_init_weights

    from ..models.adapters import wrap_lora

    cut = copy.deepcopy(config)
    for stack, (attr, field) in STACKS.items() if depths else ():
        setattr(getattr(cut, attr), field, depths[stack])
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype if dtype.is_floating_point else previous)
    try:
        with no_init_weights():
            model = model_class(cut)
    finally:
        torch.set_default_dtype(previous)
    recipe = recipe_cls(settings, facts)
    recipe.prepare(model)
    net = wrap_lora(model, recipe.lora_config(model))
    net.train()
    return net, cut, recipe


def _shape_only_linear(autocast_dtype):
    """``F.linear`` that keeps for the backward pass exactly what the real one keeps (the input when
    the weight needs a gradient, the weight when the input does, both cast as autocast casts them)
    but computes nothing: its output is allocated, not filled. Only sizes matter to the count, and
    the matrix products were nine tenths of the slice's time on a CPU."""
    import torch

    class ShapeOnlyLinear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            ctx.save_for_backward(x if weight.requires_grad else None, weight if x.requires_grad else None)
            return x.new_empty((*x.shape[:-1], weight.shape[0]))

        @staticmethod
        def backward(ctx, grad):  # never called: the slice is only run forward
            raise NotImplementedError

    def shape_only_linear(x, weight, bias=None):
        if autocast_dtype is not None and torch.is_autocast_enabled("cpu"):
            x, weight = x.to(autocast_dtype), weight.to(autocast_dtype)
            bias = None if bias is None else bias.to(autocast_dtype)
        with torch.autocast("cpu", enabled=False):
            return ShapeOnlyLinear.apply(x, weight, bias)

    return shape_only_linear


def prompt_tokens(recipe, settings) -> tuple[int, int]:
    """``(LLM tokens, Q-Former tokens)`` of the recipe's typical prompt with its specials, by the
    base's own tokenizers where its folder has them (no weights are read), else ~1.3 tokens a word."""
    text = recipe.typical_prompt()
    try:
        from transformers import AutoProcessor

        kwargs: dict[str, Any] = {"revision": settings.revision} if settings.revision else {}
        processor = AutoProcessor.from_pretrained(settings.base_model, **kwargs)
        llm = len(processor.tokenizer(text, add_special_tokens=True)["input_ids"])
        qformer = getattr(processor, "qformer_tokenizer", None)
        return llm, len(qformer(text)["input_ids"]) if qformer is not None else llm
    except Exception:  # a folder with only config.json: no tokenizer to ask
        guess = round(1.3 * len(text.split())) + 2
        return guess, guess


def probe_batch(recipe_cls, settings, config, dtype, prompt: tuple[int, int]) -> dict[str, Any]:
    """One pair of the run's layout: the vision encoder's images, the query tokens' image slots,
    the prompt (``prompt``: its LLM and Q-Former tokens), the caption at its longest and EOS;
    InstructBLIP's Q-Former also reads the prompt."""
    import torch

    n_query = config.num_query_tokens
    tokens = n_query + prompt[0] + settings.max_caption_tokens + 1
    size = config.vision_config.image_size
    ids = torch.full((1, tokens), 3, dtype=torch.long)
    ids[:, :n_query] = config.image_token_index
    labels = ids.clone()
    labels[:, :n_query + prompt[0]] = -100
    batch = {"pixel_values": torch.zeros(1, 3 * recipe_cls.images_per_pair, size, size, dtype=dtype), "input_ids": ids,
             "attention_mask": torch.ones_like(ids), "labels": labels}
    if config.model_type == "instructblip":
        batch["qformer_input_ids"] = torch.full((1, prompt[1]), 3, dtype=torch.long)
        batch["qformer_attention_mask"] = torch.ones(1, prompt[1], dtype=torch.long)
    return batch
