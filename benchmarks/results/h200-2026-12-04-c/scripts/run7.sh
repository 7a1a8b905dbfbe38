#!/bin/bash
# GPU run 7 (session 15) at the final code: the GPU tests of the checked entry points' wait
# (the check kernel, the routines, the edge cases), then the fused kernels' tests, each under
# its own time limit (little device time was left).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 110 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_check_kernel.py tests/test_gpu_routines.py tests/test_gpu_edge.py -n 7 -rf --tb=short > $OUT/gpu_subset.txt 2>&1; echo "subset rc $?" >> $OUT/gpu_subset.txt
tail -3 $OUT/gpu_subset.txt
OMP_NUM_THREADS=2 timeout 110 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_fused.py -n 7 -rf --tb=short > $OUT/gpu_fused.txt 2>&1; echo "fused rc $?" >> $OUT/gpu_fused.txt
tail -3 $OUT/gpu_fused.txt
