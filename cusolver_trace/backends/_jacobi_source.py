"""The CUDA C++ source of :mod:`.jacobi_small`: cyclic Jacobi on one tiny Hermitian matrix per
thread, written so that the very same text also compiles as plain C++ on the host (g++), where
``tests/test_jacobi_small_cpu.py`` runs it against LAPACK.

Kept apart from the Python launcher so that each file stays short; nothing here imports torch
or CuPy.

The device-only parts (the kernel with its shared-memory staging) sit under
``#if defined(__CUDACC__) || defined(__CUDACC_RTC__)``; everything else — the element traits
(real, and a minimal complex struct with inline operations), the math wrappers, the solver
``JacobiSmall<R, NC, N, VECTORS>`` and the one-matrix driver :code:`jacobi_one` — is
``__host__ __device__``-neutral: ``JD`` is ``__device__ __forceinline__`` under NVRTC / nvcc
and ``inline`` elsewhere.
"""
from __future__ import annotations

#: Threads per block of the kernel (one matrix per thread).
THREADS = 256

#: The kernel stages a block's input and output matrices through shared memory when one
#: matrix takes at most this many bytes (48 KiB of static shared memory per block at most).
STAGE_BYTES = 192

SOURCE = r"""
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define JD __device__ __forceinline__
#define JUNROLL _Pragma("unroll")
#else
#include <math.h>
#define JD inline
#define JUNROLL
#endif

#define JACOBI_THREADS """ + str(THREADS) + r"""
#define JACOBI_STAGE_BYTES """ + str(STAGE_BYTES) + r"""

// ----------------------------------------------------------------- math of float / double
JD float jsqrt(float x) { return sqrtf(x); }
JD double jsqrt(double x) { return sqrt(x); }
JD float jabs(float x) { return fabsf(x); }
JD double jabs(double x) { return fabs(x); }
JD float jldexp(float x, int e) { return ldexpf(x, e); }
JD double jldexp(double x, int e) { return ldexp(x, e); }
JD int jexponent(float x) { int e = 0; frexpf(x, &e); return e; }
JD int jexponent(double x) { int e = 0; frexp(x, &e); return e; }

template<typename R> struct JLim;
template<> struct JLim<float> {
    JD static float eps() { return 1.1920928955078125e-07f; }     // FLT_EPSILON
    JD static float big() { return 3.4028234663852886e+38f; }     // FLT_MAX
};
template<> struct JLim<double> {
    JD static double eps() { return 2.220446049250313e-16; }      // DBL_EPSILON
    JD static double big() { return 1.7976931348623157e+308; }    // DBL_MAX
};

// ----------------------------------------------------------------- element traits
// E: an off-diagonal element (R, or a complex pair). P: the phase that makes a_pq real.
template<typename R> struct JCx { R re, im; };

template<typename R, int NC> struct JT;

template<typename R> struct JT<R, 1> {
    typedef R E;
    JD static E zero() { return (R)0; }
    JD static E one() { return (R)1; }
    JD static E load(const R* p) { return p[0]; }
    JD static void store(R* p, E x) { p[0] = x; }
    JD static E conj(E x) { return x; }
    JD static R amax(E x) { return jabs(x); }
    JD static E ldexp(E x, int e) { return jldexp(x, e); }
    JD static R norm2(E x) { return x * x; }
    JD static E fill(R x) { return x; }
    // the rotation's g (signed: the classic real formulas) and the phase (none: 1)
    JD static R gval(E x, R) { return x; }
    JD static E phase(E, R) { return (R)1; }
    JD static E mulp(E, E x) { return x; }
    JD static E lin(R c, E x, R s, E y) { return c * x + s * y; }
};

template<typename R> struct JT<R, 2> {
    typedef JCx<R> E;
    JD static E zero() { E z; z.re = (R)0; z.im = (R)0; return z; }
    JD static E load(const R* p) { E z; z.re = p[0]; z.im = p[1]; return z; }
    JD static void store(R* p, E x) { p[0] = x.re; p[1] = x.im; }
    JD static E conj(E x) { E z; z.re = x.re; z.im = -x.im; return z; }
    JD static E one() { E z; z.re = (R)1; z.im = (R)0; return z; }
    JD static R amax(E x) { R a = jabs(x.re), b = jabs(x.im); return (a != a || b != b) ? a + b : (a > b ? a : b); }
    JD static E ldexp(E x, int e) { E z; z.re = jldexp(x.re, e); z.im = jldexp(x.im, e); return z; }
    JD static R norm2(E x) { return x.re * x.re + x.im * x.im; }
    JD static E fill(R x) { E z; z.re = x; z.im = x; return z; }
    // a_pq = g e^{i phi}, g = |a_pq| > 0; the phase conj(a_pq) / g makes it real
    JD static R gval(E, R m) { return m; }
    JD static E phase(E x, R m) { E z; z.re = x.re / m; z.im = -x.im / m; return z; }
    JD static E mulp(E p, E x) { E z; z.re = p.re * x.re - p.im * x.im; z.im = p.re * x.im + p.im * x.re; return z; }
    JD static E lin(R c, E x, R s, E y) { E z; z.re = c * x.re + s * y.re; z.im = c * x.im + s * y.im; return z; }
};

// ----------------------------------------------------------------- the solver
// One N x N Hermitian matrix: its diagonal d (real) and strict upper triangle u[i][j], i < j,
// and the accumulated unitary V. Every loop has a trip count known at compile time once the
// loops around it are unrolled, so every index is a constant and the arrays can live in
// registers (N = 8 complex128 with vectors spills to local memory).
template<typename R, int NC, int N, bool VECTORS>
struct JacobiSmall {
    typedef JT<R, NC> T;
    typedef typename T::E E;
    enum { NV = VECTORS ? N : 1 };
    R d[N];
    E u[N][N];
    E v[NV][NV];
    int scale;      // the matrix was multiplied by 2^-scale (exact) before the sweeps
    R bad;          // a non-finite entry of the triangle read (0 when none)

    JD E get(int i, int j) const { return i < j ? u[i][j] : T::conj(u[j][i]); }
    JD void set(int i, int j, E x) { if (i < j) u[i][j] = x; else u[j][i] = T::conj(x); }

    // The `upper` (else lower) triangle of the matrix at a, element (i, j) at
    // a + (i * sr + j * sc) * NC (strides in elements); the other triangle is never read.
    // Only the real part of the diagonal is read.
    JD void load(const R* a, long long sr, long long sc, int upper) {
        R amax = (R)0;
        bad = (R)0;
        JUNROLL
        for (int i = 0; i < N; ++i) {
            JUNROLL
            for (int j = i; j < N; ++j) {
                const R* p = a + (upper ? (i * sr + j * sc) : (j * sr + i * sc)) * NC;
                R m;
                if (i == j) {
                    d[i] = p[0];
                    m = jabs(d[i]);
                } else {
                    E x = T::load(p);
                    u[i][j] = upper ? x : T::conj(x);
                    m = T::amax(x);
                }
                if (!(m <= JLim<R>::big())) bad = m;      // Inf or NaN
                else if (m > amax) amax = m;
            }
        }
        scale = amax > (R)0 ? jexponent(amax) : 0;
    }

    JD R frobenius2() const {
        R s = (R)0;
        JUNROLL
        for (int i = 0; i < N; ++i) {
            s += d[i] * d[i];
            JUNROLL
            for (int j = i + 1; j < N; ++j) s += (R)2 * T::norm2(u[i][j]);
        }
        return s;
    }

    // One cyclic-by-row sweep; (p, q) is rotated unless |a_pq| <= tol sqrt(|a_pp| |a_qq|)
    // (Demmel-Veselic) or |a_pq| <= thr (off(A) negligible against ||A||_F). Returns whether
    // anything was rotated. Squares are safe: the matrix is scaled to max |a_ij| in [1/2, 1).
    JD bool sweep(R tol2, R thr2) {
        bool rotated = false;
        JUNROLL
        for (int p = 0; p < N - 1; ++p) {
            JUNROLL
            for (int q = p + 1; q < N; ++q) {
                const E apq = u[p][q];
                const R m2 = T::norm2(apq);
                if (m2 > thr2 && m2 > tol2 * jabs(d[p] * d[q])) {
                    rotated = true;
                    const R m = jsqrt(m2);
                    const R g = T::gval(apq, m);
                    const E ph = T::phase(apq, m);
                    // the real rotation of [[a_pp, g], [g, a_qq]] (Rutishauser's formulas)
                    const R theta = (d[q] - d[p]) / ((R)2 * g);
                    R t = (R)1 / (jabs(theta) + jsqrt(theta * theta + (R)1));
                    if (theta < (R)0) t = -t;
                    const R c = (R)1 / jsqrt(t * t + (R)1);
                    const R s = t * c;
                    d[p] -= t * g;
                    d[q] += t * g;
                    u[p][q] = T::zero();
                    // A <- J^H A J, J = diag(1, ph) [[c, s], [-s, c]] on columns (p, q)
                    JUNROLL
                    for (int r = 0; r < N; ++r) {
                        if (r == p || r == q) continue;
                        const E x = get(r, p);
                        const E y = T::mulp(ph, get(r, q));
                        set(r, p, T::lin(c, x, -s, y));
                        set(r, q, T::lin(s, x, c, y));
                    }
                    if (VECTORS) {
                        JUNROLL
                        for (int r = 0; r < NV; ++r) {
                            const E x = v[r][p % NV];
                            const E y = T::mulp(ph, v[r][q % NV]);
                            v[r][p % NV] = T::lin(c, x, -s, y);
                            v[r][q % NV] = T::lin(s, x, c, y);
                        }
                    }
                }
            }
        }
        return rotated;
    }

    JD bool converged(R tol2, R thr2) const {
        bool ok = true;
        JUNROLL
        for (int p = 0; p < N - 1; ++p) {
            JUNROLL
            for (int q = p + 1; q < N; ++q) {
                const R m2 = T::norm2(u[p][q]);
                if (m2 > thr2 && m2 > tol2 * jabs(d[p] * d[q])) ok = false;
            }
        }
        return ok;
    }

    // After load(): scale, sweep, sort ascending (columns of V alongside). Returns info: 0, or
    // N + 1 when not converged within max_sweeps sweeps or the triangle read is not finite
    // (then every eigenvalue and vector entry is NaN).
    JD int run(int max_sweeps) {
        if (bad != (R)0) {
            const R nan = bad - bad;     // Inf - Inf or NaN - NaN
            JUNROLL
            for (int i = 0; i < N; ++i) d[i] = nan;
            if (VECTORS) {
                JUNROLL
                for (int i = 0; i < NV; ++i) {
                    JUNROLL
                    for (int j = 0; j < NV; ++j) v[i][j] = T::fill(nan);
                }
            }
            scale = 0;
            return N + 1;
        }
        JUNROLL
        for (int i = 0; i < N; ++i) {
            d[i] = jldexp(d[i], -scale);
            JUNROLL
            for (int j = i + 1; j < N; ++j) u[i][j] = T::ldexp(u[i][j], -scale);
        }
        if (VECTORS) {
            JUNROLL
            for (int i = 0; i < NV; ++i) {
                JUNROLL
                for (int j = 0; j < NV; ++j) {
                    v[i][j] = i == j ? T::one() : T::zero();
                }
            }
        }
        const R eps = JLim<R>::eps();
        const R tol2 = eps * eps;
        const R thr = eps * jsqrt(frobenius2()) / (R)N;
        const R thr2 = thr * thr;
        int info = N + 1;
        for (int k = 0; k < max_sweeps; ++k) {
            if (!sweep(tol2, thr2)) { info = 0; break; }
        }
        if (info != 0 && converged(tol2, thr2)) info = 0;
        // exchange sort: constant indices only (no dynamic indexing of the arrays)
        JUNROLL
        for (int i = 0; i < N - 1; ++i) {
            JUNROLL
            for (int j = i + 1; j < N; ++j) {
                if (d[j] < d[i]) {
                    const R w = d[i]; d[i] = d[j]; d[j] = w;
                    if (VECTORS) {
                        JUNROLL
                        for (int r = 0; r < NV; ++r) {
                            const E x = v[r][i % NV]; v[r][i % NV] = v[r][j % NV]; v[r][j % NV] = x;
                        }
                    }
                }
            }
        }
        return info;
    }

    // W[k] at w + k (real); V(r, c) at vo + (r * vr + c * vc) * NC.
    JD void store(R* w, R* vo, long long vr, long long vc) const {
        JUNROLL
        for (int k = 0; k < N; ++k) w[k] = jldexp(d[k], scale);
        if (VECTORS) {
            JUNROLL
            for (int r = 0; r < NV; ++r) {
                JUNROLL
                for (int c = 0; c < NV; ++c) T::store(vo + (r * vr + c * vc) * NC, v[r][c]);
            }
        }
    }
};

// One matrix, start to end: the routine the host build tests and the kernel's unstaged path.
template<typename R, int NC, int N, bool VECTORS>
JD int jacobi_one(const R* a, long long sr, long long sc, int upper, int max_sweeps,
                  R* w, R* vo, long long vr, long long vc)
{
    JacobiSmall<R, NC, N, VECTORS> J;
    J.load(a, sr, sc, upper);
    const int info = J.run(max_sweeps);
    J.store(w, vo, vr, vc);
    return info;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// One thread per matrix, JACOBI_THREADS matrices per block, blockIdx.x * JACOBI_THREADS + t
// the matrix of thread t. Element (i, j) of matrix b at a + (b * sb + i * sr + j * sc) * NC;
// W (batch, N) contiguous; V column-major per matrix, matrices one after another (torch's
// strides (N*N, 1, N)); info int32 (batch,). Small matrices (at most JACOBI_STAGE_BYTES each)
// are staged through shared memory: the block's V goes out in coalesced stores, and so does
// its input when `packed` (sb == N*N and (sr, sc) is (N, 1) or (1, N): one contiguous run of
// the block's matrices). No atomics.
template<typename R, int NC, int N, bool VECTORS>
__device__ __forceinline__ void jacobi_kernel(const R* a, long long batch, long long sb,
    long long sr, long long sc, int upper, int packed, int max_sweeps, R* w, R* v, int* info)
{
    constexpr int NN = N * N * NC;
    constexpr bool STAGE = NN * sizeof(R) <= JACOBI_STAGE_BYTES;
    const long long base = (long long)blockIdx.x * JACOBI_THREADS;
    const int t = threadIdx.x;
    const long long b = base + t;
    const bool active = b < batch;
    if constexpr (STAGE) {
        __shared__ R tile[JACOBI_THREADS * NN];
        const long long left = batch - base;
        const int count = left < JACOBI_THREADS ? (int)left : JACOBI_THREADS;
        JacobiSmall<R, NC, N, VECTORS> J;
        if (packed) {
            const R* g = a + base * NN;
            for (int i = t; i < count * NN; i += JACOBI_THREADS) tile[i] = g[i];
            __syncthreads();
            if (active) J.load(tile + t * NN, sr, sc, upper);
            __syncthreads();       // the tile is rewritten below
        } else if (active) {
            J.load(a + b * sb * NC, sr, sc, upper);
        }
        int inf = 0;
        if (active) inf = J.run(max_sweeps);
        if (active) {
            info[b] = inf;
            J.store(w + b * N, tile + t * NN, 1, N);
        }
        if (VECTORS) {
            __syncthreads();
            R* g = v + base * NN;
            for (int i = t; i < count * NN; i += JACOBI_THREADS) g[i] = tile[i];
        }
    } else {
        if (!active) return;
        info[b] = jacobi_one<R, NC, N, VECTORS>(a + b * sb * NC, sr, sc, upper, max_sweeps,
                                                 w + b * N, VECTORS ? v + b * NN : v, 1, N);
    }
}
#endif
"""


def kernel_name(prefix: str, n: int, vectors: bool) -> str:
    """The ``extern "C"`` name of one kernel: type letter, order, ``v`` (vectors) or ``n``.

    Examples
    --------
    >>> kernel_name("z", 3, True), kernel_name("s", 8, False)
    ('jacobi_z3v', 'jacobi_s8n')
    """
    return f"jacobi_{prefix}{n}{'v' if vectors else 'n'}"


_TYPES = {"s": ("float", 1), "d": ("double", 1), "c": ("float", 2), "z": ("double", 2)}


def kernel_source(prefix: str, n: int, vectors: bool) -> str:
    """:data:`SOURCE` plus the one ``extern "C"`` kernel of (type, order, vectors): one small
    module per kind of call, compiled on first use (all 64 at once would take NVRTC long)."""
    real, nc = _TYPES[prefix]
    name = kernel_name(prefix, n, vectors)
    return SOURCE + (
        f'extern "C" __global__ void __launch_bounds__({THREADS}) {name}('
        f"const {real}* a, long long batch, long long sb, long long sr, long long sc, "
        f"int upper, int packed, int max_sweeps, {real}* w, {real}* v, int* info)\n"
        f"{{ jacobi_kernel<{real}, {nc}, {n}, {'true' if vectors else 'false'}>"
        f"(a, batch, sb, sr, sc, upper, packed, max_sweeps, w, v, info); }}\n")
