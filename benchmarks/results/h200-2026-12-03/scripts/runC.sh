set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=/tmp/xdg PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
echo "=== LU routines GPU tests"
OMP_NUM_THREADS=2 timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --tb=line tests/test_gpu_lu_routines.py > $OUT/lu_routines.txt 2>&1; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/lu_routines.txt | cut -c1-220 | tail -25
echo "=== LU table"
timeout 330 python3 benchmarks/lu_table.py $OUT/lu_table.json --deadline 240 > $OUT/lu_table.txt 2>&1; echo rc=$?; tail -45 $OUT/lu_table.txt
