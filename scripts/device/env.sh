# Sourced by every device script (on the GPU machine, no network): installs the wheels scripts/device/prepare.sh put in
# .whl (carried), sets the environment and writes $OUT/env.txt (GPU, driver, nvcc, Python and package versions).
# NVLink multicast stays off, as the device's notes require.
out="${OUT:-/tmp/device-out}"; mkdir -p "$out"
wheels=$(stat -c '%n %s' .whl/*.whl | sha256sum | cut -c1-16)  # a warm machine's next command skips the install of the same wheels
if [ "$(cat /tmp/site/.hyperloom-wheels 2>/dev/null)" != "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  echo "$wheels" > /tmp/site/.hyperloom-wheels
fi
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -2; nproc; python3 --version
  python3 -c 'import cuda.bindings, numpy, torch, triton; print("cuda-bindings", cuda.bindings.__version__, "numpy", numpy.__version__, "torch", torch.__version__, "triton", triton.__version__)'; } > "$out/env.txt" 2>&1
# The GPU's clocks, power and temperature every 100 ms while a run goes (CLOCKS=0 leaves them out), so a band or an
# A/A can be read beside them: $OUT/clocks.csv, ended with the script.
if [ "${CLOCKS:-1}" = 1 ] && command -v nvidia-smi >/dev/null; then
  fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
  nvidia-smi --query-gpu="$fields" --format=csv >/dev/null 2>&1 || fields=${fields%,*}  # an older driver: no event reasons
  nvidia-smi --query-gpu="$fields" --format=csv,nounits -lms 100 >> "$out/clocks.csv" 2>/dev/null &
  clocks_pid=$!
  trap 'kill "$clocks_pid" 2>/dev/null' EXIT
fi
