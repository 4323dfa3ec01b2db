"""The bf16 dense peaks of the GPUs the project's benchmarks run on, for model FLOPs utilisation
(MFU): achieved FLOP/s over this peak. Tensor-core bf16 without sparsity, from NVIDIA's H100 and
H200 datasheets (the datasheets give twice these, "with sparsity"). A helper of
``train_speed.py`` and ``vlm_speed.py``, not a benchmark."""

from __future__ import annotations

from typing import Optional

#: TFLOP/s, bf16 dense, per GPU
BF16_DENSE_TFLOPS = {
    "H100 SXM": 989.5,
    "H100 PCIe": 756.5,
    "H100 NVL": 835.5,
    "H200 SXM": 989.5,
    "H200 NVL": 835.5,
}


def gpu_model(device_name: str) -> Optional[str]:
    """The :data:`BF16_DENSE_TFLOPS` key of a CUDA device name (``torch.cuda.get_device_name()``:
    "NVIDIA H100 80GB HBM3" is the SXM part, "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200",
    "NVIDIA H200 NVL"); ``None`` for any other GPU."""
    name = device_name.upper()
    for chip in ("H200", "H100"):
        if chip in name:
            form = "NVL" if "NVL" in name else "PCIe" if "PCIE" in name else "SXM"
            return f"{chip} {form}"
    return None


def mfu(flops_per_second: float, device_name: str) -> Optional[float]:
    """Achieved FLOP/s as a share of the device's bf16 dense peak; ``None`` where the peak is not in the table."""
    model = gpu_model(device_name)
    return None if model is None else flops_per_second / (BF16_DENSE_TFLOPS[model] * 1e12)


def shown(share: Optional[float]) -> str:
    return "n/a (no peak for this device)" if share is None else f"{100 * share:.1f}%"
