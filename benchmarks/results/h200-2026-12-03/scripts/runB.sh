set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=/tmp/xdg PYTHONUNBUFFERED=1
echo "=== README: compare --op solve"
timeout 100 python3 -m cusolver_trace compare --op solve --n 1024 --nrhs 8 --dtype float64,complex64 --trace --summary-only > $OUT/compare_solve.txt 2>&1; echo rc=$?; tail -16 $OUT/compare_solve.txt
echo "=== trace overhead"
timeout 400 python3 benchmarks/trace_overhead.py /tmp/ovh --runs 3 --timeout 100 > $OUT/trace_overhead.txt 2>&1; echo rc=$?; cp /tmp/ovh/summary.json $OUT/ 2>/dev/null; tail -32 $OUT/trace_overhead.txt
