"""Issue 26 diagnostics: what makes a trace JSON big, and which library kernels end up outside calls."""
import json, os, sys, collections
path = sys.argv[1]
d = json.load(open(path))
print("size", os.path.getsize(path))
for k, v in d.items():
    print(f"  {k:20s} {len(json.dumps(v, separators=(',', ':'))):10d}")
    if isinstance(v, dict):
        for k2, v2 in v.items():
            n = len(json.dumps(v2, separators=(',', ':')))
            if n > 20000: print(f"      {k2:20s} {n:10d}")
s = d.get("summary") or {}
print("summary keys", list(s))
for k in ("attributed_kernels", "outside_kernels", "unattributed_library_kernels", "calls"):
    print(k, s.get(k))
ok = d.get("outside_kernels") or s.get("outside") or []
print("outside type", type(ok).__name__, (list(ok)[:3] if isinstance(ok, dict) else ok[:3]))
