"""The environment that runs numpy and OpenBLAS as a CPU without AVX2 or AVX-512 would: every
SIMD target numpy dispatches to beyond its x86-64 baseline off, OpenBLAS on its oldest x86-64
kernel, one thread. ``python tests/vector_paths.py`` prints it as shell assignments (CI's
baseline-CPU phase; nothing where this CPU runs the baseline loops only)."""

import shlex


def dispatched_vector_paths() -> list[str]:
    """numpy's SIMD targets beyond its baseline that this CPU runs (``X86_V3``, ``AVX512_ICL``, ...)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def baseline_environment() -> dict[str, str]:
    """The variables, or ``{}`` where numpy runs no vector path beyond its baseline here."""
    paths = dispatched_vector_paths()
    if not paths:
        return {}
    return {"NPY_DISABLE_CPU_FEATURES": " ".join(paths), "OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "1"}


if __name__ == "__main__":
    print(" ".join(f"{name}={shlex.quote(value)}" for name, value in baseline_environment().items()))
