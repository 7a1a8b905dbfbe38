#!/bin/bash
# GPU run 8 (session 15): the whole GPU suite at 2025247, on run 7's machine (still warm: its
# /tmp/site install and kernel cache reused).
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH XDG_CACHE_HOME=/tmp/xdg; ls /tmp/site >/dev/null || exit 9; OMP_NUM_THREADS=2 timeout 285 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "suite rc $?" >> $OUT/gpu_suite.txt; tail -3 $OUT/gpu_suite.txt
