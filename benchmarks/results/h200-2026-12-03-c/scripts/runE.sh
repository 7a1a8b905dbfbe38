#!/bin/bash
# GPU run E (session 10): the first auto call on a cold cache with builds in a build process; the fused GPU tests.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/first_call.py --no-warmup --json $OUT/first_call.json --timeout 100 2>&1 | tail -14 | tee $OUT/first_call.txt
export XDG_CACHE_HOME=/tmp/xdgE; mkdir -p $XDG_CACHE_HOME
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_fused.py tests/test_gpu_methods.py -n 6 2>&1 | tail -4 | tee $OUT/pytest_fused.txt
