python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
OMP_NUM_THREADS=2 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --tb=line tests/test_gpu_compare_lu.py tests/test_gpu_compare_timing.py -k "det or slogdet or timing" 2>&1 | tail -3
