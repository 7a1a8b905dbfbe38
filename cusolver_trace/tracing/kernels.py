"""Which library a CUDA kernel belongs to, from its (demangled) name.

One ordered table of rules; the first match wins. Derived from the kernel
names torch.profiler reported for torch 2.11.0+cu130 on an H200
(tests/data/h200-torch2.11-cu130/profiler-kernels.log):

* ATen/other: ``at::native::*`` (also inside template arguments, e.g.
  ``(anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange...>``),
  and the copy/set activities ``Memcpy DtoD (Device -> Device)``, ``Memset (Device)``.
* MAGMA (statically linked into torch): anything naming ``magma_`` (its enum
  template arguments ``(magma_uplo_t)122``), ``*_template_batched_*``
  (``trsm_template_batched_lNL_kernel``, ``gemm_template_batched_nn_kernel``),
  ``kernel_dset_pointer``, ``[sdcz]trsv_*_batched``.
* cuSOLVER: ``xxtrf4_set_info_ker``, ``potrf_*`` / ``potrfBatch_*``
  (``potrf_cta_lower_batch``, ``potrf_syrk_T16_nc_kernel``, ``potrf_set_info``),
  ``kernel<getrf_wo_pivot_params_<...>>`` (the blocked Xpotrf kernel),
  ``copy_info_kernel``.
* cuBLAS: ``trsm_left_kernel`` / ``trsm_right_kernel``, ``kernel_trsm_[lr]_*``,
  ``*_cublas`` (``sm90_xmma_gemm_..._cublas``), ``nvjet_*``, gemm/gemv kernels, and
  the trsv kernels ``[sdcz]trsv_init*`` / ``trsv_[lu][nt]_exec``.  The fixture
  README lists ``trsv_ln_exec`` under cuSOLVER, but the API log of the same
  workload (``cholesky_solve`` nrhs=1, batch 1) shows ``cusolverDnXpotrs`` doing
  its work through two ``cublasDtrsm_v2_64`` calls with n=1 and nothing else, so
  these are cuBLAS's trsm taking its single-column (trsv) path; on the H200 with
  torch 2.11 they also appear as ``trsv_lt_exec_up`` / ``trsv_ln_exec_up`` (traced
  GPyTorch fit, ``cublasDtrsm_v2`` with n = 1).

Added from per-call attribution (:mod:`cusolver_trace.tracing._hook`: kernels
launched *inside* a logged call) on the H200: inside ``cublasDtrsm_v2_64`` with
n = 4 right-hand sides, ``trsm_ln_kernel<double, 32u, 32u, 4u, false>``,
``cutlass::Kernel2<cutlass_80_tensorop_d884gemm_...>`` and
``cublasLt::splitKreduce_kernel<...>`` (cuBLAS); in torch's MAGMA
``potrs_batched`` path, ``zdisplace_pointers_kernel`` (MAGMA's pointer
arithmetic for batched sub-blocks, launched between its trsm/gemm kernels).

Anything else is ``ATen/other``.
"""
from __future__ import annotations

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
