"""torch baselines measured the way bench measures: L2 flushed, device events, median of many.

Run: python bench/torch_baselines.py [N]   (N float32 elements; default 268435456, 1 GiB)
"""
import json
import statistics
import sys

import torch


SPIN_CYCLES = 100_000  # about 50 us at the H200's clock: covers torch's per-call dispatch on a busy host


def timed(fn, reps=200, warmup=20, flush_mode="write"):
    """Median seconds of fn between device events, the last-level cache flushed before each call the way
    bench's flush_mode does it: "write" fills a 2x-L2 buffer (dirty lines the timed call may pay to write
    back), "read" reads one (clean lines, as bench's read-flush kernel leaves them)."""
    if flush_mode not in ("write", "read"):
        raise ValueError(f"flush_mode is 'write' or 'read', got {flush_mode!r}")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.ones(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device="cuda")
    samples = []
    for i in range(warmup + reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if flush_mode == "write":
            flush.fill_(i & 0x7F)
        else:
            flush.amax()
        # No synchronize here: the device is still flushing (then spinning) while the host enqueues the start
        # event and fn's launches, so the events bracket the device work alone, as bench's do. Recording
        # start on an idle device would time torch's dispatch latency too.
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= warmup:
            samples.append(start.elapsed_time(end) / 1e3)
    return statistics.median(samples)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 268435456
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_s = timed(lambda: dst.copy_(src))
    # Read-only reductions: each reads the 4n bytes once and writes one value. torch's kernels differ
    # in how close they come to the DRAM read rate, so all are reported and the fastest is the reference.
    reads = {
        "sum": lambda: src.sum(),
        "amax": lambda: src.amax(),
        "aminmax": lambda: torch.aminmax(src),
        "int32 view sum": lambda: src.view(torch.int32).sum(),
        "float16 view sum (fp32 acc)": lambda: src.view(torch.float16).sum(dtype=torch.float32),
    }
    read_times = {name: timed(fn) for name, fn in reads.items()}
    read_s = min(read_times.values())
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    mm_s = timed(lambda: a @ b, reps=50, warmup=10)
    print(json.dumps({
        "torch": torch.__version__, "device": torch.cuda.get_device_name(0), "n": n,
        "copy_s": copy_s, "copy_gbps": 8 * n / copy_s / 1e9,
        "read_s": read_s, "read_gbps": 4 * n / read_s / 1e9, "read_method": min(read_times, key=read_times.get),
        "read_gbps_by_method": {name: 4 * n / seconds / 1e9 for name, seconds in read_times.items()},
        "bf16_matmul_tflops": 2 * 8192**3 / mm_s / 1e12,
    }))


if __name__ == "__main__":
    main()
