python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit
export XDG_CACHE_HOME=/tmp/xdg
for s in 1 2 3; do echo "== process $s"; timeout 120 python3 devrun/s15/diag3.py $s 2>&1 | grep -v Warning; done > $OUT/diag3.txt
cat $OUT/diag3.txt
