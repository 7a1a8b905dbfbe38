"""Session 12: where tracing the BoTorch client costs (issue 26)."""
import json, os, subprocess, sys, time
ROOT = os.getcwd()
OUT = os.environ.get("OUT", "/tmp")
CLIENT = os.path.join(ROOT, "examples", "trace_botorch.py")
HOOK = os.path.join(ROOT, "cusolver_trace", "tracing", "_hook.py")
PY = sys.executable
from cusolver_trace.tracing.runner import logger_env

def run(tag, argv, env=None, out=subprocess.DEVNULL):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
    w = time.perf_counter() - t
    print(f"{tag:40s} {w:7.2f} s  rc {p.returncode}  {p.stderr.strip()[-300:] if p.returncode else ''}", flush=True)
    return w, p

LOAD_HOOK = f"""
import importlib.util, sys, runpy, os, time, json
spec = importlib.util.spec_from_file_location('cthook', {HOOK!r}); hm = importlib.util.module_from_spec(spec); spec.loader.exec_module(hm)
"""
HOOK_ONLY = LOAD_HOOK + f"""
hook = hm.install_stdout_hook()
sys.argv = [{CLIENT!r}]
runpy.run_path({CLIENT!r}, run_name='__main__')
import ctypes; ctypes.CDLL(None).fflush(None)
print('hook names', len(hook.names), file=sys.stderr); sys.stderr.flush()
os._exit(0)
"""
PROF_ONLY = LOAD_HOOK + f"""
import torch
t0 = time.perf_counter()
prof = hm.Profiler(torch, cuda=True, all_ops=False); prof.start()
t1 = time.perf_counter()
sys.argv = [{CLIENT!r}]
runpy.run_path({CLIENT!r}, run_name='__main__')
torch.cuda.synchronize()
t2 = time.perf_counter()
from torch._C._autograd import _disable_profiler
r = _disable_profiler()
t3 = time.perf_counter()
ev = hm.kineto_events(r, ops=False)
t4 = time.perf_counter()
raw = r.events(); t5 = time.perf_counter()
n = len(raw)
for e in raw: e.start_ns()
t6 = time.perf_counter()
for e in raw: str(e.activity_type())
t7 = time.perf_counter()
for e in raw: e.name()
t8 = time.perf_counter()
for e in raw: str(e.device_type())
t9 = time.perf_counter()
p = hm.correlate(ev, all_ops=False)
t10 = time.perf_counter()
print(json.dumps(dict(start=t1-t0, run=t2-t1, disable=t3-t2, kineto_events=t4-t3, events_call=t5-t4, n=n, start_ns=t6-t5, act_str=t7-t6, name=t8-t7, dev_str=t9-t8, correlate=t10-t9, nev=len(ev))), file=sys.stderr)
os._exit(0)
"""
res = {}
res["untraced1"] = run("untraced", [PY, CLIENT])[0]
res["untraced2"] = run("untraced", [PY, CLIENT])[0]
with open(os.path.join(OUT, "loggers.log"), "w") as f:
    res["loggers_nohook"] = run("loggers, stdout to a file, no hook", [PY, CLIENT], env=logger_env(None), out=f)[0]
print("logger bytes", os.path.getsize(os.path.join(OUT, "loggers.log")))
os.unlink(os.path.join(OUT, "loggers.log"))
with open("/tmp/hook.log", "w") as f:
    w, p = run("loggers + stdout hook (no profiler)", [PY, "-c", HOOK_ONLY], env=logger_env(None), out=f)
res["loggers_hook"] = w; print(p.stderr.strip()[-200:])
w, p = run("profiler only (CUDA, user scope)", [PY, "-c", PROF_ONLY])
res["profiler_only"] = w; print(p.stderr.strip()[-600:])
w, p = run("trace --json (parent under cProfile)", [PY, "-m", "cProfile", "-o", os.path.join(OUT, "parent.prof"), "-m", "cusolver_trace", "trace", "--json", "/tmp/t.json", "--", PY, CLIENT])
res["trace"] = w
d = json.load(open("/tmp/t.json")); print("wall_s", d.get("wall_s"), "tracing_s", d.get("tracing_s"))
w, p = run("trace --json (plain)", [PY, "-m", "cusolver_trace", "trace", "--json", "/tmp/t2.json", "--", PY, CLIENT])
res["trace_plain"] = w
d = json.load(open("/tmp/t2.json")); print("wall_s", d.get("wall_s"), "tracing_s", d.get("tracing_s"))
import pstats, io
s = io.StringIO(); pstats.Stats(os.path.join(OUT, "parent.prof"), stream=s).sort_stats("cumulative").print_stats(35); print(s.getvalue()[:7000])
s = io.StringIO(); pstats.Stats(os.path.join(OUT, "parent.prof"), stream=s).sort_stats("tottime").print_stats(20); print(s.getvalue()[:4000])
print(json.dumps(res))
