"""What every workload of bench/gpu/real_suite.sh shares: one final JSON line
with its measurements, and exit status 1 on any error (a CUDA error raised by
PyTorch or JAX included), so the runner counts failures from the status and
the line alike.

  import real_common
  real_common.run(main)   # main(result: dict) fills result; returns nothing
"""
import json
import os
import sys
import time
import traceback


def run(main):
    result = {"workload": os.path.basename(sys.argv[0]).removesuffix(".py"),
              "pid": os.getpid(), "argv": sys.argv[1:], "start_ms": int(time.time() * 1000)}
    rc = 0
    try:
        main(result)
        result.setdefault("status", "ok")
    except BaseException as e:  # noqa: BLE001 - the JSON line must come out whatever failed
        traceback.print_exc()
        result["status"] = "error"
        result["error"] = f"{type(e).__name__}: {e}"[:400]
        rc = 1
    result.setdefault("end_ms", int(time.time() * 1000))
    print(json.dumps(result), flush=True)
    # os._exit skips interpreter teardown, which hides errors; only after a failure.
    if rc:
        os._exit(rc)


def median(values):
    v = sorted(values)
    if not v:
        return 0.0
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def cuda_event_ms(pairs):
    """Per-step GPU milliseconds from (start, end) torch.cuda.Event pairs,
    read after a synchronize: median and mean."""
    ms = [s.elapsed_time(e) for s, e in pairs]
    return {"step_ms_median": round(median(ms), 4), "step_ms_mean": round(sum(ms) / len(ms), 4) if ms else 0.0}
