"""Kernel-name classification, on the names torch.profiler reported on the H200."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cusolver_trace.tracing import classify_kernel
from cusolver_trace.tracing.kernels import KERNEL_RULES, LIBRARIES, short_kernel_name

LOG = Path(__file__).parent / "data" / "h200-torch2.11-cu130" / "profiler-kernels.log"


def kernels_by_op() -> dict[str, list[str]]:
    """``{"[cholesky_inverse n=256 b=None]": [kernel names...], ...}`` from the log."""
    out, op = {}, None
    for line in LOG.read_text().splitlines():
        m = re.match(r"^(\[[^\]]*\]) aten: ", line)
        if m:
            op = m.group(1)
        m = re.match(r"^\s+kernels\(\d+\): (\[.*\])\s*$", line)
        if m:
            names = ast.literal_eval(m.group(1))
            # the probe printed at most 40 names of a longer list
            assert len(names) == min(40, int(re.search(r"kernels\((\d+)\)", line).group(1)))
            out[op] = names
    return out


OPS = kernels_by_op()


def libs(op: str) -> set[str]:
    return {classify_kernel(k) for k in OPS[op]}


def test_log_read():
    assert len(OPS) == 15
    assert sum(len(v) for v in OPS.values()) == 277


@pytest.mark.parametrize("name,library", [
    ("xxtrf4_set_info_ker(int, int*)", "cuSOLVER"),
    ("void potrf_cta_lower_batch<double, double, 16>(int, int, int, double**, unsigned long, int*)", "cuSOLVER"),
    ("void potrfBatch_trsm_lower<double, double, 16>(int, int, int, int, int, int, double**, unsigned long)", "cuSOLVER"),
    ("void potrf_syrk_T16_nc_kernel<double, 5, 4, 4, 5, 4>(int, int, int, int, int, int, int, double**, unsigned long)", "cuSOLVER"),
    ("void potrf_set_info<256>(int, int, int*)", "cuSOLVER"),
    ("void kernel<getrf_wo_pivot_params_<double, 0, 256, 1, 64, 64, 68, 16, 1, 1> >(int, int, void*, int, void*, int, int, int, int, int, int*)", "cuSOLVER"),
    ("copy_info_kernel(int, int*)", "cuSOLVER"),
    ("void trsm_left_kernel<int, double, 256, 4, true, false, false, false, false>(cublasTrsmParams<int, double>, double, double const*, int)", "cuBLAS"),
    ("void kernel_trsm_l_mul32<double, 8, false, false, false, false>(int, int, double const*, double const*, int, double*, int, double, int)", "cuBLAS"),
    ("sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize32x32x32_stage5_warpsize2x2x1_tensor16x8x16_execute_kernel__5x_cublas", "cuBLAS"),
    ("void trsv_ln_exec<double, 32u, 32u, 4u, false>(int, double const*, long, double*, long, int*)", "cuBLAS"),
    ("dtrsv_init(int*)", "cuBLAS"),
    # launched inside cublasDtrsm_v2_64 (n=4) per the stdout-hook attribution on the H200
    # (names as docs/dispatch-h200-torch2.11.0.md shows them, parameter lists dropped)
    ("void trsm_ln_kernel<double, 32u, 32u, 4u, false>", "cuBLAS"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_d884gemm_32x32_16x5_tn_align1>", "cuBLAS"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, double, double, double, dou", "cuBLAS"),
    ("zdisplace_pointers_kernel", "MAGMA"),
    ("dtrsv_init_up(int*, int)", "cuBLAS"),
    ("void trsm_template_batched_lNL_kernel<double, 32, 32>(magma_diag_t, int, int, double, double**, int, double**, int, int, int, int, int)", "MAGMA"),
    ("void gemm_template_batched_nn_kernel<double, 16, 8, 32, 24, 16, 16, 8, 16, 8, 0, 0>(int, int, int, double const* const*, int, double const* const*, int, double*)", "MAGMA"),
    ("kernel_dset_pointer(double**, double*, int, int, int, int)", "MAGMA"),
    ("void dtrsv_notrans_kernel_outplace_batched<128, 128, 1, 1000000, 0, (magma_uplo_t)122, (magma_trans_t)111, (magma_diag_t)131>(int, double**, int, double**, int, double**)", "MAGMA"),
    ("void at::native::triu_tril_kernel<double, int, false, 1, true>(at::cuda::detail::TensorInfo<double, int>, at::cuda::detail::TensorInfo<double const, int>, long, long, int)", "ATen/other"),
    ("void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar const&)>(int)", "ATen/other"),
    ("Memcpy DtoD (Device -> Device)", "ATen/other"),
    ("Memset (Device)", "ATen/other"),
    ("some_new_kernel(int)", "ATen/other"),
])
def test_classify(name, library):
    assert classify_kernel(name) == library


def test_every_logged_kernel_has_a_known_library():
    for names in OPS.values():
        for k in names:
            assert classify_kernel(k) in LIBRARIES


def test_per_op_families():
    # batch 1: cuSOLVER (+ cuBLAS for the solves), never MAGMA
    assert libs("[linalg.cholesky n=256 b=None]") == {"cuSOLVER", "ATen/other"}
    assert libs("[cholesky_inverse n=256 b=None]") == {"cuSOLVER", "cuBLAS", "ATen/other"}
    assert libs("[cholesky_solve n=256 b=None]") == {"cuSOLVER", "cuBLAS", "ATen/other"}
    assert libs("[cholesky_inverse n=2048 b=None]") == {"cuSOLVER", "cuBLAS", "ATen/other"}
    # batched factorization: cuSOLVER's potrfBatched
    for b in (2, 3):
        assert libs(f"[linalg.cholesky n=256 b={b}]") == {"cuSOLVER", "ATen/other"}
    # batched inverse / solve (torch 2.11 default): MAGMA only, no cuSOLVER, no cuBLAS
    for op in ("[cholesky_inverse n=256 b=3]", "[cholesky_solve n=256 b=3]",
               "[cholesky_inverse n=32 b=64]", "[cholesky_solve n=32 b=64]"):
        assert libs(op) == {"MAGMA", "ATen/other"}, op


def test_rule_table_names_only_known_libraries():
    assert {lib for lib, _ in KERNEL_RULES} <= set(LIBRARIES)


@pytest.mark.parametrize("name,short", [
    ("xxtrf4_set_info_ker(int, int*)", "xxtrf4_set_info_ker"),
    ("void trsm_left_kernel<int, double, 256, 4, true, false, false, false, false>"
     "(cublasTrsmParams<int, double>, double, double const*, int)",
     "trsm_left_kernel<int, double, 256, 4, true, false, false, false, false>"),
    ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"),
])
def test_short_kernel_name(name, short):
    assert short_kernel_name(name) == short


def test_short_kernel_name_elides_long_templates():
    name = OPS["[linalg.cholesky n=256 b=None]"][0]
    s = short_kernel_name(name, width=50)
    assert len(s) == 50 and s.endswith("…>") and s.startswith("at::native::elementwise_kernel<")


def test_gpu_user_annotations_are_not_kernels():
    """torch.profiler draws record_function ranges (``Optimizer.step#Adam.step``) on the GPU
    timeline as ``gpu_user_annotation`` events that span kernels; counting them as kernels
    gave a traced GPyTorch fit +63 % of library GPU time on the H200. They are dropped."""
    from types import SimpleNamespace

    from cusolver_trace.tracing import _hook
    from cusolver_trace.tracing.kernels import classify_kernel

    def ev(name, dev, annotation=False, kind="kernel"):
        return SimpleNamespace(
            name=lambda: name, device_type=lambda: f"DeviceType.{dev}",
            start_ns=lambda: 10, duration_ns=lambda: 5, correlation_id=lambda: 1,
            is_user_annotation=lambda: annotation, activity_type=lambda: kind)

    events = [ev("trsm_left_kernel<int, double>", "CUDA"),
              ev("Optimizer.step#Adam.step", "CUDA", annotation=True, kind="gpu_user_annotation"),
              ev("Optimizer.step#Adam.step", "CUDA", kind="gpu_user_annotation"),  # older torch
              ev("Optimizer.step#Adam.step", "CPU", annotation=True, kind="user_annotation")]
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: events)))
    got = _hook.kineto_events(prof)
    assert [(e[0], e[4]) for e in got] == [("cuda", "trsm_left_kernel<int, double>"),
                                           ("cpu", "Optimizer.step#Adam.step")]
    # cuBLAS's single-column trsm kernels as named on the H200 with torch 2.11
    assert classify_kernel("void trsv_lt_exec_up<double, 32u, 32u, 4u, false, false>(int)") == "cuBLAS"
    assert classify_kernel("void trsv_ln_exec_up<double, 32u, 32u, 4u, false>(int)") == "cuBLAS"
