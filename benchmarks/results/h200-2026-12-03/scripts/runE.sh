python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=$PWD/.cache-xdg PYTHONUNBUFFERED=1
OMP_NUM_THREADS=2 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --tb=line tests/test_gpu_lu_routines.py tests/test_gpu_fused.py -k "lu_routines or check_in_the_fused_potrf_inverse" 2>&1 | tail -5
