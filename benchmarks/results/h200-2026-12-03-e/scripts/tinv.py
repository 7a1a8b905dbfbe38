"""Session 12: trace(torch.cholesky_inverse, L) at n = 4096, timed in parts (issue 26)."""
import json, os, sys, time, tempfile
import torch
t = time.perf_counter()
n = 4096
g = torch.Generator(device="cuda").manual_seed(0)
A = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
L = torch.linalg.cholesky(A @ A.mT + n * torch.eye(n, device="cuda", dtype=torch.float64))
torch.cuda.synchronize()
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter(); torch.save({"x": L}, os.path.join(d, "a.pt")); t1 = time.perf_counter()
    torch.load(os.path.join(d, "a.pt"), map_location="cuda"); torch.cuda.synchronize(); t2 = time.perf_counter()
print(f"torch.save 128 MB {t1-t0:.2f} s, load to cuda {t2-t1:.2f} s")
t0 = time.perf_counter()
import subprocess
subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda'); import cusolver_trace"], check=True)
print(f"a fresh python importing torch, CUDA init, cusolver_trace: {time.perf_counter()-t0:.2f} s")
import cusolver_trace as ct
for _ in range(2):
    t0 = time.perf_counter(); tr = ct.trace(torch.cholesky_inverse, L); print(f"trace(cholesky_inverse) n=4096: {time.perf_counter()-t0:.2f} s")
