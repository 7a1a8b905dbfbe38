set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=$PWD/.cache-xdg PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch, cupy, nvmath; print(torch.__version__, cupy.__version__, nvmath.__version__)"
echo "=== probe_front"; timeout 120 python3 devrun/s8/probe_front.py 2>&1 | tee $OUT/probe_front.txt | tail -40
echo "=== gpu_probe_lu"; timeout 150 python3 tests/gpu_probe_lu.py > $OUT/gpu_probe_lu.txt 2>&1; tail -40 $OUT/gpu_probe_lu.txt
echo "=== LU backend + compare GPU tests"
OMP_NUM_THREADS=2 timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --tb=line tests/test_gpu_lu_backend.py tests/test_gpu_compare_lu.py tests/test_checks_lu.py > $OUT/pytest_lu.txt 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/pytest_lu.txt | sort | uniq -c | sort -rn | head -60
