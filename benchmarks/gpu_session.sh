#!/usr/bin/env bash
# One GPU session: the GPU table of benchmarks/RESULTS.md and the CUDA tests, in one call, under a time budget.
#
#   BENCH_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/gpu_session.sh       # on the GPU machine
#   REHEARSE=1 bash benchmarks/gpu_session.sh      # on a CPU first: every step, tiny shapes (--quick), the
#                                                  # CUDA tests' code on the CPU (RANKSCALE_TEST_CUDA_ON_CPU)
#
# Steps run in priority order (STEPS overrides the list), each under its own limit and all under BUDGET_S
# seconds, so one that runs long costs only itself; each writes its section of RESULTS.md (a copy of
# benchmarks/RESULTS.md) as it finishes. $OUT receives RESULTS.md, steps.txt and logs.tgz (every step's log,
# the tests' JUnit report), also when a step fails: few files, as a device call returns. Nothing is installed: the project runs from
# src/ (PYTHONPATH). Packages the GPU machine lacks travel as wheels in .whl/ (installed into /tmp/site);
# trained ladder checkpoints of a finished default run, for a bfloat16 mismatch rate that means something,
# in .gpu/run/resources/ladder/<key>/ (models/ladder-l4-d256, models/ladder-l2-d32, tokenizer/).
set -u
OUT=${OUT:-/tmp/gpu_session}
WORK=$(mktemp -d)
mkdir -p "$OUT"
finish() {
  cp "$WORK/RESULTS.md" "$WORK/steps.txt" "$OUT/" 2>/dev/null
  tar czf "$OUT/logs.tgz" -C "$WORK" . 2>/dev/null
}
trap finish EXIT
BUDGET_S=${BUDGET_S:-420}
TESTS_LIMIT=150
START=$(date +%s)
STEPS=${STEPS:-setup tests throughput-bf16 memory-bf16 trained-bf16 throughput-f32 lmeval-bf16 memory-f32 lmeval-f32}
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1 PYTHONPATH=src:benchmarks:.${EXTRA_PATH:+:$EXTRA_PATH} HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-python3}
if [ -n "${REHEARSE:-}" ]; then
  DEV=(--device cpu --quick) SUMMARY=0
  # the CUDA defaults, written out (tiny stand-ins of the same output columns under --quick), but windows of
  # REHEARSE_LENGTH tokens: the fused kernel's code runs under Triton's interpreter, whose cost is a Python
  # overhead per step of a (row block, column tile) program, 5-12 ms of CPU (on wide heads the interpreter's
  # default tiles are wider, rankscale.fused_rank.default_blocks); 2 windows of 16 tokens are 30 scored rows,
  # one row block in either dtype (64 rows bfloat16, 32 float32: the row masks still run), where --quick's
  # 256 tokens are 8 (16) blocks
  L=${REHEARSE_LENGTH:-16}
  THR=(--models pythia-1.4b,qwen2.5-0.5b,gemma-3-270m --text random --batch-sizes auto --max-length "$L" --kernels fused,chunked)
  MEM=(--model qwen2.5-0.5b --max-length "$L" --kernels fused,chunked) LME=(--models pythia-1.4b,qwen2.5-0.5b --batch-sizes 8,32)
  # the interpreter's tl.dot is numpy's matmul of one tile: OpenBLAS's threads on a shared CPU made a bfloat16
  # tile 4.6x as costly (22.7 against 4.9 ms of CPU); torch (MKL) keeps its own --threads
  export RANKSCALE_TEST_CUDA_ON_CPU=1 TRITON_INTERPRET=1 OPENBLAS_NUM_THREADS=1
  BUDGET_S=${REHEARSE_BUDGET_S:-900} TESTS_LIMIT=400
else
  DEV=(--device cuda) SUMMARY=1 THR=() MEM=() LME=()
fi
cp benchmarks/RESULTS.md "$WORK/RESULTS.md"
RES=(--results "$WORK/RESULTS.md" --write)
LADDER=.gpu/run
declare -A SECONDS_OF

step() {  # step NAME LIMIT_S COMMAND...: run it under min(LIMIT_S, what the budget leaves), log to $WORK/NAME.log
  local name=$1 limit=$2 left
  shift 2
  left=$((BUDGET_S - ($(date +%s) - START) - 5))
  if [ "$left" -lt 20 ]; then
    echo "=== $name: skipped, ${left}s of the budget left" | tee -a "$WORK/steps.txt"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "=== $name (limit ${limit}s): $*"
  local t0 rc cpu TIMEFORMAT='%U %S'
  t0=$(date +%s)
  # and its CPU seconds (user + system, the processes it waited for): on a shared CPU the wall clock is also
  # the other processes' load, which the line names
  { time timeout --kill-after=5 "$limit" "$@" >"$WORK/$name.log" 2>&1; } 2>"$WORK/$name.cpu"
  rc=$?
  SECONDS_OF[$name]=$(($(date +%s) - t0))
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$WORK/$name.cpu")
  echo "=== $name: exit $rc after ${SECONDS_OF[$name]}s (${cpu}s of CPU; load $(cut -d' ' -f1 /proc/loadavg))" |
    tee -a "$WORK/steps.txt"
  tail -n 4 "$WORK/$name.log"
}

for s in $STEPS; do
  case $s in
  setup)
    {
      if [ -d .whl ] && [ -z "${REHEARSE:-}" ]; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
      fi
      nvidia-smi 2>&1 | head -n 15
      $PY -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'available', torch.cuda.is_available(), 'transformers', transformers.__version__)"
    } >"$WORK/setup.log" 2>&1
    [ -d /tmp/site ] && export PYTHONPATH=$PYTHONPATH:/tmp/site
    cat "$WORK/setup.log"
    ;;
  tests)
    step tests "$TESTS_LIMIT" $PY -m pytest -m cuda tests/test_cuda.py -o addopts="" -ra -q -p no:cacheprovider --junitxml="$WORK/tests.xml"
    ;;
  throughput-bf16)
    step throughput-bf16 200 $PY benchmarks/throughput.py "${DEV[@]}" "${THR[@]}" --dtype bfloat16 "${RES[@]}"
    ;;
  memory-bf16)
    step memory-bf16 120 $PY benchmarks/memory.py "${DEV[@]}" "${MEM[@]}" --dtype bfloat16 "${RES[@]}"
    ;;
  trained-bf16)  # the precision row on trained weights: HumanEval through the ladder's own tokenizer
    if [ -d "$LADDER" ]; then
      step trained-bf16 90 $PY benchmarks/throughput.py "${DEV[@]}" --dtype bfloat16 --ladder-root "$LADDER" \
        --text humaneval --max-length 128 --models ladder-l4-d256,ladder-l2-d32 "${RES[@]}"
    else
      echo "=== trained-bf16: skipped, no $LADDER" | tee -a "$WORK/steps.txt"
    fi
    ;;
  throughput-f32)
    step throughput-f32 180 $PY benchmarks/throughput.py "${DEV[@]}" "${THR[@]}" --dtype float32 --windows 64 "${RES[@]}"
    ;;
  lmeval-bf16 | lmeval-f32)
    dtype=$([ "$s" = lmeval-bf16 ] && echo bfloat16 || echo float32)
    if $PY -c "import lm_eval" 2>/dev/null; then
      step "$s" 120 $PY benchmarks/lmeval.py "${DEV[@]}" "${LME[@]}" --dtype "$dtype" "${RES[@]}"
    else
      echo "=== $s: skipped, lm_eval does not import" | tee -a "$WORK/steps.txt"
    fi
    ;;
  memory-f32)
    step memory-f32 120 $PY benchmarks/memory.py "${DEV[@]}" "${MEM[@]}" --dtype float32 "${RES[@]}"
    ;;
  *)
    echo "unknown step $s" >&2
    exit 2
    ;;
  esac
done
if [ "$SUMMARY" = 1 ]; then
  $PY benchmarks/run_all.py --summary "${RES[@]}" >"$WORK/summary.log" 2>&1
fi
echo "=== done in $(($(date +%s) - START))s of ${BUDGET_S}s"
