"""Session 13: the check launch (_status) of the first checked method="torch" call of a new shape, timed line by line
(an instrumented copy of backends.cuda._status at af2077d), against the same call at once."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
import torch
import cusolver_trace as ct
from cusolver_trace import routines
from cusolver_trace.backends import cuda as cb
pc = time.perf_counter_ns
MARK = []
def m(tag): MARK.append((tag, pc()))
def _status(L, X, upper, info, summary):
    m("enter")
    dt = cb._dtype(L.dtype); m("_dtype")
    n = L.shape[-1]
    batch = L.numel() // (n * n) if n else 0; m("shape, numel")
    grid = cb.status_grid(batch, n)
    nc = 2 if dt.is_complex else 1; m("status_grid")
    idx = L.get_device(); m("get_device")
    stream = cb.current_stream_ptr(idx); m("current_stream_ptr")
    ctx = cb.context(idx); m("context")
    state = ctx.check_state
    if state.word is None: state = None
    else: state.word[0] = -1
    m("word[0] = -1")
    acc = state.acc.get(12 * batch, stream) if grid[1] == 1 else torch.zeros((batch, 3), dtype=torch.int32, device=L.device)
    m("acc")
    args = ctx.status_args; m("status_args")
    L3, X3 = cb._batched(L, n), cb._batched(X, n); m("_batched x2")
    sL, sX = cb._strided(L3, n, nc), cb._strided(X3, n, nc); m("_strided x2")
    vals = (*sL, *sX, n, 1 if upper else 0, 0 if info is None else info.data_ptr(), acc.data_ptr(),
            state.counter_ptr, state.word_ptr); m("tuple, data_ptr")
    args.values[:] = vals; m("values[:] =")
    cb._launch_status(idx, dt.prefix, grid, args, stream); m("_launch_status")
    return acc, state, stream, batch
def report():
    out = {}
    for (a, t0), (b, t1) in zip(MARK, MARK[1:]): out[b] = out.get(b, 0) + t1 - t0
    MARK.clear(); return out
def wall(fn):
    torch.cuda.synchronize(); MARK.clear(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3, report()
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
cb._status = _status
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="torch"))
batch, n = int(sys.argv[1]), int(sys.argv[2])
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
for _ in range(20): torch.cholesky_inverse(L); torch.cuda.synchronize()
ta, a = wall(lambda: ct.cholesky_inverse(L, method="torch"))
tb, b = wall(lambda: ct.cholesky_inverse(L, method="torch"))
print(f"{batch}x{n}: call first {ta:.0f} us, at once {tb:.0f} us")
for k in a: print(f"  {k:20s} first {a[k]/1e3:6.1f}  at once {b.get(k,0)/1e3:6.1f}")
