"""Segment Anything refinement of diff clusters (DAVIR §3.1).

Every cluster's bounding box and centre point prompt ``SamPredictor`` on the after image and
on the before image (a removal is only visible in the before image), each at its own full
resolution: the prompts are mapped from the working resolution into each image's pixels, the
compensated camera shift (integer and sub-pixel) included for the before image, and the
before image's masks are mapped back into the after image's pixels. Of the 2 x 3 masks
(``multimask_output``), the one with the highest IoU with the cluster's region is kept when
that IoU reaches ``tau``. A cluster whose best SAM mask stays below ``tau`` is dropped, as the
paper's "suppresses irrelevant background noise" says; ``keep_unmatched`` keeps its diff
region instead (our option).

Checkpoints load with ``torch.load(weights_only=True)`` (no pickled code runs) into the
architecture ``--sam-type`` names: ``vit_h``, ``vit_l``, ``vit_b`` (segment-anything's
registry, the official ``sam_vit_*.pth`` files) or ``tiny`` (a small architecture for tests
and quick checks, random unless you trained it).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from PIL import Image

from ..devices import resolve_device
from ..errors import IDCError

SAM_TYPES = ("vit_h", "vit_l", "vit_b", "tiny")


def build_tiny_sam():
    """A 0.5M-parameter Sam with the real architecture's structure (tests, dry runs)."""
    import torch
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    img, patch, dim = 256, 16, 32
    emb = img // patch
    return Sam(
        image_encoder=ImageEncoderViT(img_size=img, patch_size=patch, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                                      out_chans=dim, qkv_bias=True, norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
                                      use_rel_pos=True, window_size=4, global_attn_indexes=(1,)),
        prompt_encoder=PromptEncoder(embed_dim=dim, image_embedding_size=(emb, emb), input_image_size=(img, img), mask_in_chans=4),
        mask_decoder=MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(depth=1, embedding_dim=dim, mlp_dim=64, num_heads=2),
                                 transformer_dim=dim, iou_head_depth=2, iou_head_hidden_dim=32),
        pixel_mean=[123.675, 116.28, 103.53],
        pixel_std=[58.395, 57.12, 57.375],
    )


def check_sam_arguments(checkpoint: Path | str, sam_type: str) -> None:
    """Fail before any work on an unknown architecture or a missing checkpoint file."""
    if sam_type not in SAM_TYPES:
        raise IDCError(f"unknown --sam-type {sam_type!r}; choose one of {', '.join(SAM_TYPES)}")
    if not Path(checkpoint).is_file():
        raise IDCError(f"SAM checkpoint not found: {checkpoint}")


def load_sam(checkpoint: Path | str, sam_type: str, device: str = "auto"):
    """A Sam model from a checkpoint file, on ``device``; clear errors before any work."""
    import torch

    path = Path(checkpoint)
    check_sam_arguments(path, sam_type)
    device = resolve_device(device)
    if sam_type == "tiny":
        model = build_tiny_sam()
    else:
        from segment_anything import sam_model_registry

        model = sam_model_registry[sam_type](checkpoint=None)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception as exc:  # shape mismatch, not a state dict, pickled code
        raise IDCError(f"{path} is not a {sam_type} Segment Anything checkpoint: {exc}") from None
    return model.to(device).eval()


class SamRefiner:
    """Turns diff clusters into SAM masks (see the module docstring)."""

    def __init__(self, model):
        from segment_anything import SamPredictor

        self.predictor = SamPredictor(model)

    def _candidates(self, image: np.ndarray, boxes: np.ndarray, points: np.ndarray) -> np.ndarray:
        import torch

        p = self.predictor
        p.set_image(image)
        device = p.device
        tb = p.transform.apply_boxes_torch(torch.as_tensor(boxes, dtype=torch.float, device=device), image.shape[:2])
        tp = p.transform.apply_coords_torch(torch.as_tensor(points[:, None, :], dtype=torch.float, device=device), image.shape[:2])
        labels = torch.ones((len(points), 1), dtype=torch.int, device=device)
        with torch.no_grad():
            masks, _, _ = p.predict_torch(point_coords=tp, point_labels=labels, boxes=tb, multimask_output=True)
        return masks.cpu().numpy()  # (clusters, 3, H, W) bool

    def refine(self, before: Image.Image, after: Image.Image, clusters: Sequence, size: tuple[int, int], tau: float,
               alignment: Optional[object] = None) -> list[Optional[np.ndarray]]:
        """Per cluster: its best SAM mask (bool, after-image pixels) if that mask's IoU with the
        cluster's region reaches tau, else ``None`` (the caller drops the cluster, as DAVIR does,
        or keeps its region). ``size`` is the working resolution (w, h) of the clusters and
        ``alignment`` the :class:`~.align.Alignment` the diff pipeline removed."""
        from .diff import upsample

        w, h = size
        (wa, ha), (wb, hb) = after.size, before.size
        dy, dx = ((alignment.shift[0] + alignment.subpixel[0], alignment.shift[1] + alignment.subpixel[1])
                  if alignment is not None else (0.0, 0.0))
        # continuous working coordinates: a box covers [x0, x1 + 1), a point sits at its pixel's centre
        boxes = np.array([[c.box[0], c.box[1], c.box[2] + 1, c.box[3] + 1] for c in clusters], dtype=np.float64)
        points = np.array([[c.point[0] + 0.5, c.point[1] + 0.5] for c in clusters], dtype=np.float64)
        # after[y, x] ~ before[y - dy, x - dx]: the before image's working coordinates are shifted back
        before_boxes, before_points = boxes - [dx, dy, dx, dy], points - [dx, dy]
        scale_a, scale_b = np.array([wa / w, ha / h]), np.array([wb / w, hb / h])
        cand_after = self._candidates(np.asarray(after.convert("RGB")), boxes * np.tile(scale_a, 2), points * scale_a)
        cand_before = self._candidates(np.asarray(before.convert("RGB")), before_boxes * np.tile(scale_b, 2),
                                       before_points * scale_b)
        # a before-image mask in after-image pixels: after u -> working u*w/wa -> before (.. - dx)*wb/w
        to_after = (wb / wa, 0.0, -dx * wb / w, 0.0, hb / ha, -dy * hb / h)
        regions: list[Optional[np.ndarray]] = []
        for c, masks_a, masks_b in zip(clusters, cand_after, cand_before):
            region = upsample(c.region, (wa, ha))
            masks = list(masks_a) + [np.asarray(Image.fromarray(m.astype(np.uint8) * 255).transform(
                (wa, ha), Image.AFFINE, to_after, resample=Image.NEAREST)) > 127 for m in masks_b]
            ious = [float((m & region).sum() / max(1, (m | region).sum())) for m in masks]
            j = int(np.argmax(ious))
            regions.append(masks[j] if ious[j] >= tau else None)
        return regions
