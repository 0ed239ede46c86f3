#!/usr/bin/env bash
# Paired overhead of libwarpscope_cuda.so inside ONE PyTorch process (not a
# test): the stand-in agent switches the library between off, exact and duty
# with callbacks (50 of every 1000 ms) every PHASE_MS; the loop reports its
# iteration count every 0.1 s; each phase's rate (its first 300 ms left out,
# for the switch to settle) is compared with the "off" phases around it.
#   bench/gpu/cuda_phase_check.sh DIR [SECONDS] [PHASE_MS]
set -u
DIR=$(cd "$1" && pwd); SECS=${2:-150}; PHASE_MS=${3:-2000}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH=$DIR/lib
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-phase.sock --rate 200 --print-kernels 0 --alternate "$PHASE_MS" \
  > "$OUT/phases.txt" 2>&1 &
L=$!
sleep 0.5
CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so WARPSCOPE_AGENT_SOCKET=/tmp/ws-phase.sock \
  "$PY" "$HERE/phase_loop.py" "$SECS" > "$OUT/phase_loop.txt" 2>&1
kill $L; wait $L 2>/dev/null
"$PY" - "$OUT/phases.txt" "$OUT/phase_loop.txt" <<'PYEOF'
import statistics, sys
phases = []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4 and p[0] == "phase":
        phases.append((int(p[3]), p[1]))
samples = []
for line in open(sys.argv[2]):
    p = line.split()
    if len(p) == 4 and p[0] == "t":
        samples.append((int(p[1]), int(p[3])))
settle = 300_000_000
rates = []  # (phase index, name, it/s)
for i, (start, name) in enumerate(phases):
    end = phases[i + 1][0] if i + 1 < len(phases) else None
    if end is None:
        break
    inside = [s for s in samples if start + settle <= s[0] <= end]
    if len(inside) < 3:
        continue
    (t0, n0), (t1, n1) = inside[0], inside[-1]
    rates.append((i, name, (n1 - n0) / ((t1 - t0) / 1e9)))
by_name = {}
ratios = {}
for k, (i, name, r) in enumerate(rates):
    by_name.setdefault(name, []).append(r)
    if name == "off":
        continue
    # The off phases just before and after (paired: same process, seconds apart).
    offs = [x for (j, n, x) in rates if n == "off" and abs(j - i) <= 2]
    if offs:
        ratios.setdefault(name, []).append(r / statistics.mean(offs))
for name, v in by_name.items():
    print(f"{name:8s} phases {len(v):3d}  median {statistics.median(v):8.1f} it/s")
for name, v in ratios.items():
    print(f"{name:8s} paired ratio to neighbouring off phases: median {statistics.median(v):.4f} "
          f"(n {len(v)}, quartiles {statistics.quantiles(v, n=4)[0]:.4f} .. {statistics.quantiles(v, n=4)[2]:.4f})")
PYEOF
tail -4 "$OUT/phases.txt"
