set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,driver_version --format=csv
for v in torch auto torch auto torch auto; do
  timeout 120 python3 devrun/s15/diag2.py $v 2>&1 | grep -v Warning
done > $OUT/diag2.txt
cat $OUT/diag2.txt
