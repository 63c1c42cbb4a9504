#!/usr/bin/env bash
# Issue 41's GPU rows in one short run on a lent accelerator (docs/configs.md, "GPU check").
#
#   bash scripts/device_bench.sh --fetch    # here, once: the wheels the device image lacks -> .whl/
#   bash scripts/device_bench.sh            # there: the device tool's run, with carry [".whl"]
#
# The device image (Python 3.12, torch, Lightning, PyG, numba) lacks hydra-core, omegaconf and
# antlr4; they travel as wheels (antlr4 4.9.3 is an sdist on PyPI: built here, pure Python).
# What it measures: bench/bench_train.py on the synthetic 10M-triple graph, CPU and GPU rows in
# one process, dense and sparse TransE at batch 4,096 and 65,536 (issue 41's goal: >= 10M
# triples/s on the GPU at 65,536), then PQ-2H at batch 1,024 (the row the earlier H200 run
# read 190k triples/s on). Figures land in $OUT (train10m.json, trainpq2h.json, the logs).
# About 5 min on an H100/H200 with 16 cores: drawing the graph takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fetch" ]; then
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    -d .whl hydra-core==1.3.8 omegaconf==2.3.1
  python3 -m pip wheel --quiet --no-deps -w .whl antlr4-python3-runtime==4.9.3
  ls -l .whl
  exit 0
fi

ls .whl/*.whl >/dev/null 2>&1 || { echo "error: .whl/ has no wheels: run 'bash scripts/device_bench.sh --fetch' here and carry .whl"; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/lokg-device}"
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } | tee "$OUT/device.txt"
python3 bench/bench_train.py --synthetic 10000000 --batch-sizes 4096 65536 \
  --model transe transe_sparse --steps 60 --json "$OUT/train10m.json" 2>&1 | tee "$OUT/train10m.log"
python3 bench/bench_train.py --data pq2h --batch-sizes 1024 --model transe --steps 100 \
  --json "$OUT/trainpq2h.json" 2>&1 | tee "$OUT/trainpq2h.log"
