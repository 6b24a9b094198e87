#!/usr/bin/env bash
# The GPU checks in one short run, for a machine with an NVIDIA GPU: the CUDA Adam kernel bitwise
# against the reference (gpu_kernels suite, no fork), the monitor's NVML path, the GPU
# benchmark (adam.cu against a device-to-device copy), the executor's cuda backend (gpu_exec
# suite; ratios 0, 0.5, 1 x both schedules with the cpu backend's digest; bench/exec --gpu),
# ratiolab calibrate --backend cuda and ratiolab validate on the cuda backend (the 10 % time
# target gated). Builds when it can; otherwise uses an
# already built tree (build/). Writes the logs to $OUT when set. Exit 0 only when all checks ran
# and passed.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ratiolab-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
if command -v nvcc >/dev/null && pkg-config --exists check jansson 2>/dev/null; then
  make -j"$(nproc)" RL_INNER=1 build/ratiolab build/tests/run_tests build/bench/adam build/bench/exec \
       build/tests/progs/gpuhog build/tests/progs/memhog > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 3; }
fi
export RATIOLAB_BIN=$PWD/build/ratiolab RATIOLAB_SRC=$PWD RATIOLAB_BUILD=$PWD/build
rc=0
CK_RUN_SUITE=gpu_kernels build/tests/run_tests 2>&1 | tee "$out/gpu_kernels.log" | tail -3
grep -q '^[1-9][0-9]* passed, 0 failed' "$out/gpu_kernels.log" || rc=1
CK_RUN_SUITE=monitor CK_RUN_CASE=monitor build/tests/run_tests 2>&1 | tee "$out/monitor.log" | tail -3
grep -q 'skipped: no GPU' "$out/monitor.log" && rc=1
build/bench/adam --gpu 2>&1 | tee "$out/bench_gpu.log" || rc=1
CK_RUN_SUITE=gpu_exec build/tests/run_tests 2>&1 | tee "$out/gpu_exec.log" | tail -3
grep -q '^[1-9][0-9]* passed, 0 failed' "$out/gpu_exec.log" || rc=1
# The executor on the GPU: ratios 0, 0.5, 1 x both schedules give one digest, the cpu backend's
# and the scalar reference's; --comm-dtype fp16 (the model dtype; exact on one rank, no sum)
# too; the overlap schedule's device Adam and copies are timed with CUDA events (busy > 0).
ex="--scale 64 --warmup 1 --steps 2"
args="$ex --ratios 0,0.5,1 --policies exact --schedules overlap,deepspeed-0.12"
build/ratiolab run $ex --reference > "$out/run_ref.log" 2>&1 || rc=1
ref=$(awk '/^digest /{print $2}' "$out/run_ref.log")
build/ratiolab run $args --backend cuda > "$out/run_cuda.log" 2>&1 || { echo "executor: cuda run failed"; rc=1; }
cat "$out/run_cuda.log"
build/ratiolab run $args --backend cpu > "$out/run_cpu.log" 2>&1 || { echo "executor: cpu run failed"; rc=1; }
n_cuda=$(grep -c " digest ${ref:-none}\$" "$out/run_cuda.log")
n_cpu=$(grep -c " digest ${ref:-none}\$" "$out/run_cpu.log")
if [ -z "$ref" ] || [ "$n_cuda" != 6 ] || [ "$n_cpu" != 6 ]; then
  echo "executor: digests differ (reference ${ref:-missing}; equal on cuda: $n_cuda of 6, on cpu: $n_cpu of 6)"
  rc=1
fi
build/ratiolab run $ex --ratio 0.5 --backend cuda --comm-dtype fp16 --hash > "$out/run_cuda_fp16.log" 2>&1
grep -q "^digest ${ref:-none}\$" "$out/run_cuda_fp16.log" || { echo "executor: --comm-dtype fp16 on cuda"; rc=1; }
build/ratiolab run $ex --ratio 0.5 --backend cuda --json > "$out/run_cuda.json" 2>&1 || rc=1
# ZeRO-3 prefetch on cuda (all-gathers on the communication stream, an event after each): a deep
# prefetch (stage3_prefetch_bucket_size 1e9) changes no bit.
printf '{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1e9, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}, "fp16": {"enabled": true}}\n' \
  > "$out/prefetch.json"
build/ratiolab run $ex --backend cuda --ds-config "$out/prefetch.json" --hash > "$out/run_cuda_prefetch.log" 2>&1
grep -q "^digest ${ref:-none}\$" "$out/run_cuda_prefetch.log" && grep -q '^prefetch ' "$out/run_cuda_prefetch.log" \
  || { echo "executor: prefetch on cuda"; rc=1; }
for ph in gpu_adam grad_d2h param_h2d; do
  grep -A1 "\"$ph\": {" "$out/run_cuda.json" | grep -Eq '"busy_ns": [1-9]' \
    || { echo "executor: phase $ph has no CUDA-event time"; rc=1; }
done
RATIOLAB_SRC=$PWD build/bench/exec --gpu 2>&1 | tee "$out/bench_exec_gpu.log"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "executor: bench/exec --gpu failed"; rc=1; }
# calibrate --backend cuda: pinned/pageable copies per GPU and all at once, D2D, GPU Adam; the
# profile must load (predict reads it).
build/ratiolab calibrate --backend cuda --base hgx-h200 --quiet --out "$out/calibrated-gpu.json" 2>&1 \
  | tee "$out/calibrate_gpu.log" || rc=1
build/ratiolab predict --hw "$out/calibrated-gpu.json" --model llama2-7b --ratio 0.3 > "$out/predict_calibrated.log" 2>&1 || rc=1
# calibrate --backend cuda at a model's shapes: cuBLAS sgemm and bf16 GemmEx over llama2-7b's GEMMs
# (4096 tokens: QKV, output, MLP up/gate and down), and NCCL all-gather / reduce-scatter bus
# bandwidth against message size under mpirun, one rank per GPU (NCCL refuses two ranks on one
# GPU: with a single GPU it is not measured and says so); the profile must load.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
launch=""
if [ "$ngpu" -gt 1 ]; then
  launch="mpirun --oversubscribe -np $ngpu"
  [ "$(id -u)" = 0 ] && launch="$launch --allow-run-as-root"
fi
gemms="4096x12288x4096,4096x4096x4096,4096x22016x4096,4096x4096x11008"
$launch build/ratiolab calibrate --backend cuda --base hgx-h200 --gemm "$gemms" --quiet \
  --out "$out/calibrated-gpu-shapes.json" 2>&1 | tee "$out/calibrate_gpu_shapes.log" || rc=1
if [ "$ngpu" -gt 1 ]; then
  grep -q 'NCCL, [0-9]* ranks' "$out/calibrate_gpu_shapes.log" || { echo "calibrate: NCCL not measured"; rc=1; }
else
  grep -q 'NCCL collectives: not measured' "$out/calibrate_gpu_shapes.log" || { echo "calibrate: NCCL line missing"; rc=1; }
fi
grep -q 'cuBLAS (GPU 0)' "$out/calibrate_gpu_shapes.log" || { echo "calibrate: cuBLAS not measured"; rc=1; }
build/ratiolab predict --hw "$out/calibrated-gpu-shapes.json" --model llama2-7b --ratio 0.3 \
  > "$out/predict_calibrated_shapes.log" 2>&1 || rc=1
# validate on the GPUs: the executor's cuda backend (one rank per GPU) against the simulator with a
# fresh calibration of the GPUs over hgx-h200, ratios 0, 0.5, 1: bits, honored ratio and memory
# gated as always, and the step time gated at the 10 % target.
build/ratiolab validate --backend cuda --calibrate --hw hgx-h200 --scale 16 --seq-len 512 --ratios 0,0.5,1 \
  --ranks "$ngpu" --gate-time 10 --out "$out/validate-gpu" > "$out/validate_gpu.log" 2>&1 \
  || { echo "validate: cuda backend failed a check or missed the 10 % time target"; rc=1; }
grep -E '^  (bitwise|honored_ratio|memory_ledger|memory_process|time) ' "$out/validate_gpu.log"
echo "gpu-check: $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc
