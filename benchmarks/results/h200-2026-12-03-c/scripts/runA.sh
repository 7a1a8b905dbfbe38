#!/bin/bash
# GPU run A (session 10): issue 27 memory/speed at large n (new 2-buffer gemm_lauum), the plans' GPU tests, compile-time breakdown; issue 26 trace diagnostics.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee $OUT/gpu.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/test_gpu_plans.py tests/test_gpu_sweep_memory.py -n 4 2>&1 | tail -6 | tee $OUT/pytest_plans.log
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_routines.py -n 4 -k "inverse or potri or spd" 2>&1 | tail -4 | tee $OUT/pytest_routines.log
timeout 240 python3 devrun/s10/memspeed.py $OUT/memspeed.json 4096,8192,16384 2>&1 | tee $OUT/memspeed.log | tail -80
timeout 150 python3 devrun/s10/compile_time.py $OUT/compile_time.json 2>&1 | tee $OUT/compile_time.log
timeout 300 python3 benchmarks/trace_overhead.py /tmp/ovh --runs 1 --timeout 100 2>&1 | tail -20 | tee $OUT/trace_overhead.log
python3 devrun/s10/trace_diag.py /tmp/ovh/traced-0.json 2>&1 | tee $OUT/trace_diag.log
tail -30 /tmp/ovh/profiler.log > $OUT/profiler_tail.log 2>&1
cp /tmp/ovh/traced-0.json /tmp/ovh/summary.json $OUT/ 2>/dev/null
gzip -c /tmp/ovh/by-op.json > $OUT/by-op.json.gz 2>/dev/null
echo done
