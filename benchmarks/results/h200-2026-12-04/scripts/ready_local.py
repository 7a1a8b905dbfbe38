"""Local (CPU, no GPU) timing of fused.ready on the calling thread for 200 new shapes and again (FakeCuda-like inputs; the background thread held back by DELAY = 5 s). Development data, session 13: b3c1b6b 8.9-10.0 us first / 4.9-6.0 next; af2077d 3.1-3.3 / 2.7-2.9 (medians, two processes each). Run: PYTHONPATH=$PWD python3 ready_local.py LABEL"""
import time, statistics, torch, sys
from cusolver_trace.backends import fused as F, _fused_launch as L, _fused_build as B
B.DELAY = 5.0   # the thread does nothing during the timing
L._DEVICE[0] = ((9, 0), 227 * 1024)
class X:
    def __init__(s, n): s.shape = (1000, n, n); s.dtype = torch.float64; s._st = (n*n, 1, n)
    def stride(s): return s._st
    def get_device(s): return 0
F.ready("inverse", X(3), False, True); B.start_worker()
xs = [X(n) for n in range(4, 204)]
pc = time.perf_counter_ns
firsts = []
for x in xs:
    t = pc(); F.ready("inverse", x, False, True); firsts.append(pc() - t)
nexts = []
for x in xs:
    t = pc(); F.ready("inverse", x, False, True); nexts.append(pc() - t)
print(sys.argv[1], "first-per-shape median %.1f us, next %.1f us" % (statistics.median(firsts)/1e3, statistics.median(nexts)/1e3))
