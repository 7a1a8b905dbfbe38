#!/bin/bash
# GPU run F (session 9): the rest of the LU family's and the eigensolvers' compare GPU tests under torch 2.13.
set -o pipefail
[ -d /tmp/torchnew/torch ] || { cat /tmp/.tc/part-? > /tmp/$(cat /tmp/.tc/NAME) && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/torchnew /tmp/$(cat /tmp/.tc/NAME) || exit 7; }
[ -d /tmp/ncclnew/nvidia ] || { cat /tmp/.tn/part-? > /tmp/$(cat /tmp/.tn/NAME) && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ncclnew /tmp/$(cat /tmp/.tn/NAME) || exit 8; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export LD_PRELOAD=$(find /tmp/ncclnew -name 'libnccl.so.2' | head -1) PYTHONPATH=/tmp/torchnew:/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))' | tee $OUT/torch213.log
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_compare_lu.py tests/test_gpu_eigh.py -k "not compare_lu_family_default and not compare_eigensolvers_default and not call_sequences and not every_row and not million" 2>&1 | tee $OUT/compare213_rest.log | tail -15
