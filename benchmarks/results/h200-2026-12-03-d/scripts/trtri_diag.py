"""Inverting the diagonal blocks of a lower factor: per-block trsm vs batched (session 11)."""
import torch, time, statistics
torch.backends.cuda.preferred_linalg_library("default")
def ev(fn, r=10):
    for _ in range(2): fn()
    ts = []
    for _ in range(r):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)

for n in (4096, 8192, 16384):
    A = torch.randn(n, n, device="cuda", dtype=torch.float64)
    L = torch.tril(A) / n ** 0.5 + 2 * torch.eye(n, device="cuda", dtype=torch.float64)
    V = torch.zeros_like(L)
    Lt = L.mT  # column-major storage as the plans use: treat as the transposed problem
    def blocks(X, b):
        nb = n // b
        return X.as_strided((nb, b, b), (b * (n + 1), n, 1))
    out = {}
    for b in (512, 256, 128, 64):
        Lb, Vb = blocks(L, b), blocks(V, b)
        I = torch.eye(b, device="cuda", dtype=torch.float64).expand(n // b, b, b)
        def loop():
            for i in range(n // b):
                torch.linalg.solve_triangular(Lb[i], I[i], upper=False, out=Vb[i])
        streams = [torch.cuda.Stream() for _ in range(6)]
        def loop6():
            cur = torch.cuda.current_stream()
            for s in streams: s.wait_stream(cur)
            for i in range(n // b):
                with torch.cuda.stream(streams[i % 6]):
                    torch.linalg.solve_triangular(Lb[i], I[i], upper=False, out=Vb[i])
            for s in streams: cur.wait_stream(s)
        def batched():
            Vb.copy_(torch.linalg.solve_triangular(Lb, I, upper=False))
        def inv_ex():
            Vb.copy_(torch.linalg.inv_ex(Lb)[0])
        out[b] = (ev(loop), ev(loop6), ev(batched), ev(inv_ex))
        print(f"n={n} b={b}: loop {out[b][0]:.3f} ms, 6 streams {out[b][1]:.3f}, batched trsm {out[b][2]:.3f}, inv_ex {out[b][3]:.3f}", flush=True)
    # level-batched: base b0 batched trsm, then levels: V21 = -V22 @ (L21 @ V11)
    for b0 in (32, 64, 128):
        def level():
            Lb, Vb = blocks(L, b0), blocks(V, b0)
            I = torch.eye(b0, device="cuda", dtype=torch.float64).expand(n // b0, b0, b0)
            Vb.copy_(torch.linalg.solve_triangular(Lb, I, upper=False))
            s = 2 * b0
            while s <= 512:
                h = s // 2; nb = n // s
                L21 = L.as_strided((nb, h, h), (s * (n + 1), n, 1), h * n)
                V11 = V.as_strided((nb, h, h), (s * (n + 1), n, 1), 0)
                V22 = V.as_strided((nb, h, h), (s * (n + 1), n, 1), h * (n + 1))
                V21 = V.as_strided((nb, h, h), (s * (n + 1), n, 1), h * n)
                W = torch.bmm(L21, V11)
                torch.bmm(V22, W, out=V21)
                V21.neg_()
                s *= 2
        t = ev(level)
        ref = torch.linalg.solve_triangular(L[:512, :512], torch.eye(512, device="cuda", dtype=torch.float64), upper=False)
        err = (V[:512, :512] - ref).abs().max().item()
        print(f"n={n} level-batched b0={b0} to 512: {t:.3f} ms (err {err:.1e})", flush=True)
    del A, L, V
    torch.cuda.empty_cache()
