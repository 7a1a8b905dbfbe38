set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=$PWD/.cache-xdg PYTHONUNBUFFERED=1
echo "=== whole GPU suite"
OMP_NUM_THREADS=2 timeout 560 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 --tb=line > $OUT/gpu_suite.txt 2>&1
echo rc=$?
grep -E "^(FAILED|ERROR)" $OUT/gpu_suite.txt | cut -c1-220 | head -60
tail -3 $OUT/gpu_suite.txt
