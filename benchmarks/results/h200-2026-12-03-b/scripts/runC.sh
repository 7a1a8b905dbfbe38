#!/bin/bash
# GPU run C (session 9): the LU family's and the eigensolvers' compare GPU tests under torch 2.13.
set -o pipefail
cat /tmp/.tc/part-? > /tmp/$(cat /tmp/.tc/NAME) && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/torchnew /tmp/$(cat /tmp/.tc/NAME) || exit 7
cat /tmp/.tn/part-? > /tmp/$(cat /tmp/.tn/NAME) && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ncclnew /tmp/$(cat /tmp/.tn/NAME) || exit 8
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export LD_PRELOAD=$(find /tmp/ncclnew -name 'libnccl.so.2' | head -1) PYTHONPATH=/tmp/torchnew:/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))' | tee $OUT/torch213.log
timeout 480 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_compare_lu.py tests/test_gpu_eigh.py -k "compare_lu_family_default or compare_eigensolvers_default or call_sequences" 2>&1 | tee $OUT/compare213.log | tail -15
