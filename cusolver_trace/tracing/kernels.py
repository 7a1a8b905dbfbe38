"""Which library a CUDA kernel belongs to, from its (demangled) name.

One ordered table of rules, :data:`KERNEL_RULES`; the first match wins, anything else is
``ATen/other``. The rules come from the kernel names torch.profiler reported on the H200
(tests/data/h200-torch2.11-cu130/profiler-kernels.log) and from the kernels per-call
attribution (:mod:`._hook`) found inside logged calls; the families of each library, and
why the trsv kernels are cuBLAS's trsm, are in docs/reading-a-trace.md, "The kernel table".
"""
from __future__ import annotations

import functools
import re

__all__ = ["LIBRARIES", "KERNEL_RULES", "classify_kernel", "short_kernel_name"]

LIBRARIES = ("cuSOLVER", "cuBLAS", "MAGMA", "ATen/other")
OTHER = "ATen/other"

#: (library, pattern) in priority order; patterns see the name without "void ".
KERNEL_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (lib, re.compile(rx)) for lib, rx in (
        (OTHER, r"\bat::|\bc10::|^Mem(?:cpy|set)\b"),
        ("MAGMA", r"magma_|_template_batched_|^kernel_dset_pointer\b|^[sdcz]trsv_\w*_batched\b"
                  r"|^[sdcz]?displace_pointers_kernel\b"),
        ("cuSOLVER", r"^(?:xxtrf\w*|potrf\w*|potrs\w*|copy_info_kernel)\b|^kernel<getrf_wo_pivot"),
        ("cuBLAS", r"_cublas\b|^nvjet_|^kernel_trsm_[lr]_|^trsm_(?:left|right|[lr][nt])_kernel\b"
                   r"|^cublasLt::|^cutlass::Kernel2?<cutlass_\d+_tensorop_\w*gemm"
                   r"|^[sdcz]trsv_init\w*|^trsv_[lu][nt]_exec\w*"
                   r"|^(?:sm\d+|ampere|volta|turing)_\w*(?:gemm|xmma)|^gemv\w*kernel|^gemm\w*_kernel"),
    )
)


def _bare(name: str) -> str:
    name = name.strip()
    return name[5:] if name.startswith("void ") else name


@functools.lru_cache(maxsize=8192)   # a program launches ~10⁵ kernels of a few hundred names
def classify_kernel(name: str) -> str:
    """Library of a CUDA kernel: ``"cuSOLVER"``, ``"cuBLAS"``, ``"MAGMA"`` or ``"ATen/other"``.

    ``name`` is the demangled name torch.profiler reports, e.g.
    ``"void trsm_left_kernel<int, double, 256, 4, true, ...>(cublasTrsmParams<int, double>, ...)"``
    -> ``"cuBLAS"``. Unknown names are ``"ATen/other"``.
    """
    bare = _bare(name)
    for lib, rx in KERNEL_RULES:
        if rx.search(bare):
            return lib
    return OTHER


def short_kernel_name(name: str, width: int = 72) -> str:
    """Kernel name for display: no ``void``, no parameter list, long template
    arguments elided (``trsm_left_kernel<int, double, 256, 4, true, …>``)."""
    s = _bare(name)
    if s.endswith(")"):  # drop the trailing top-level "(params)"
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i] if i > 0 and not s[:i].endswith(" ") else s
                break
    return s if len(s) <= width else s[: width - 2] + "…>"
