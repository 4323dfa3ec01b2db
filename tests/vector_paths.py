"""The environment that runs numpy and OpenBLAS as a CPU without AVX2 or AVX-512 would: every
SIMD target numpy dispatches to beyond its x86-64 baseline off, OpenBLAS on its oldest x86-64
kernel, one thread; with ``libm``, glibc's plain math functions too (no AVX, no FMA).
``python tests/vector_paths.py`` prints it, glibc's included, as shell assignments (CI's
baseline-CPU phase; nothing where this CPU runs numpy's baseline loops only)."""

import shlex

#: glibc picks its exp, log and pow by CPU; these are the plain ones (they round about 5 inputs in
#: 10,000 otherwise than the FMA ones, for pycocoevalcap as for the toolkit)
GLIBC_PLAIN_MATH = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,-FMA4"}


def dispatched_vector_paths() -> list[str]:
    """numpy's SIMD targets beyond its baseline that this CPU runs (``X86_V3``, ``AVX512_ICL``, ...)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def baseline_environment(libm: bool = False) -> dict[str, str]:
    """The variables, or ``{}`` where numpy runs no vector path beyond its baseline here."""
    paths = dispatched_vector_paths()
    if not paths:
        return {}
    numpy_and_blas = {"NPY_DISABLE_CPU_FEATURES": " ".join(paths), "OPENBLAS_CORETYPE": "Prescott",
                      "OPENBLAS_NUM_THREADS": "1"}
    return {**numpy_and_blas, **(GLIBC_PLAIN_MATH if libm else {})}


if __name__ == "__main__":
    print(" ".join(f"{name}={shlex.quote(value)}" for name, value in baseline_environment(libm=True).items()))
