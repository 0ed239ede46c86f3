"""bench/gpu/real_suite.sh's results: what the runs said and what the server
answered, then a markdown summary for docs/benchmarks.md.

  real_suite_summary.py collect WORK API > results.json   (while the server runs)
  real_suite_summary.py report results.json > summary.md

collect reads WORK/runs.tsv (one line per run: part, name, config, exit
status, ms, log, round), each run's log (its last JSON line, CUDA errors,
the injection library's lines), WORK/info.env and the agents' /metrics
dumps, and asks the server (API) for: every injected run's GPU time; the
training runs' gpu_time per kernel (/api/v1/top) and per call site
(collapsed stacks); the profiler-inside run's GPU time and recorded kernels
per phase; the insights over the starved and busy-sync runs."""
import glob
import json
import os
import re
import statistics
import sys
import urllib.parse
import urllib.request

SITES = ("forward_pass", "backward_pass", "optimizer_step")
AUTOGRAD_FRAMES = ("torch::autograd::Engine::thread_main", "torch::autograd::Engine::thread_init")
CUDA_ERROR = re.compile(r"CUDA error|unspecified launch failure|illegal memory access|CUDA_ERROR_|cudaError")
CRASH_TEXT = re.compile(r"Segmentation fault|Fatal Python error|core dumped|Aborted")
TARGETS = {"adaptive": 0.05, "exact": 0.01}
COUNTER_KEYS = re.compile(r"^cuda_lib_|cupti|step_aside|graph|^gpu_kernels|^gpu_recording_windows$|^cuda_connections|"
                          r"^cuda_protocol_errors$|dropped|^gpu_probe_hits$|^gpu_launch_stacks")


# ---------------------------------------------------------------- collect

def get(api, path, **params):
    url = f"{api}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode()
    except Exception as e:  # noqa: BLE001 - an answer that failed is reported, not fatal
        print(f"GET {url}: {e}", file=sys.stderr)
        return None


def get_json(api, path, **params):
    text = get(api, path, **params)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def sel(pid):
    return '{pid="%s"}' % pid


def second_floor(ms):
    return ms // 1000 * 1000


def parse_log(path):
    info = {"json": None, "cuda_errors": 0, "crash_lines": 0, "warpscope_lines": [], "it_per_s": {}}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return info
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("{") and s.endswith("}"):
            try:
                info["json"] = json.loads(s)
            except ValueError:
                pass
        if CUDA_ERROR.search(line):
            info["cuda_errors"] += 1
        if CRASH_TEXT.search(line):
            info["crash_lines"] += 1
        if "warpscope-cuda" in line and len(info["warpscope_lines"]) < 3:
            info["warpscope_lines"].append(s[:200])
        m = re.match(r"it_per_s ([0-9.]+)(?: (\w+))?", s)
        if m:
            info["it_per_s"][m.group(2) or "launch"] = float(m.group(1))
    return info


def counters(path):
    out = {}
    try:
        for line in open(path):
            m = re.match(r'warpscope_agent_events_total\{.*event="([^"]+)".*\} ([0-9.eE+-]+)$', line.strip())
            if m and (m.group(1).startswith(("cuda", "gpu")) or "cupti" in m.group(1)):
                out[m.group(1)] = float(m.group(2))
    except OSError:
        return None
    return out


def gpu_total(api, pid, from_ms, to_ms):
    top = get_json(api, "/api/v1/top", type="gpu_time", selector=sel(pid), **{"from": from_ms, "to": to_ms}, limit=1)
    return top.get("total") if top else None


def site_shares(collapsed):
    ns = {s: 0 for s in SITES + ("autograd_thread", "other")}
    for line in (collapsed or "").splitlines():
        stack, _, value = line.rpartition(" ")
        if not value.isdigit():
            continue
        frames = stack.split(";")
        site = next((s for s in SITES if any(f == s or f.startswith(s + " ") for f in frames)), None)
        if site is None and any(a in f for f in frames for a in AUTOGRAD_FRAMES):
            site = "autograd_thread"
        ns[site or "other"] += int(value)
    return ns


def norm(name):
    return "".join(name.split())


def collect_train(api, run, ref, work):
    r = run["result"]
    pid, steps = r["pid"], r.get("steps") or 0
    q = {"from": second_floor(r["measured_start_ms"]), "to": second_floor(r["measured_end_ms"]) + 1000}
    top = get_json(api, "/api/v1/top", type="gpu_time", selector=sel(pid), limit=0, **q) or {}
    kernels = {norm(f["name"]): f["self"] for f in top.get("functions", []) if f.get("kind") == 4}
    collapsed = get(api, "/api/v1/profile", type="gpu_time", selector=sel(pid), format="collapsed", **q)
    tag = f"{run['config']}.r{run['round']}"
    with open(f"{work}/answers/train_collapsed.{tag}.txt", "w") as f:
        f.write(collapsed or "")
    ws_total = sum(kernels.values())
    out = {"config": run["config"], "round": run["round"], "pid": pid, "steps": steps,
           "seconds": (r["measured_end_ms"] - r["measured_start_ms"]) / 1000,
           "step_ms_cuda_events": r.get("step_ms_median"), "model": r.get("model"),
           "ws_kernel_ns": ws_total, "ws_ns_per_step": ws_total / steps if steps else None,
           "ws_sites_ns": site_shares(collapsed)}
    if ref and steps:
        ref_kernels = {norm(k): v for k, v in ref["kernels_ns"].items()}
        ref_steps = ref["steps"]
        out["ref_ns_per_step"] = ref["kernel_ns_per_step"]
        out["ratio"] = out["ws_ns_per_step"] / ref["kernel_ns_per_step"] if ref["kernel_ns_per_step"] else None
        total_ref = sum(ref_kernels.values())
        rows = []
        for name, v in sorted(ref_kernels.items(), key=lambda kv: -kv[1]):
            share = v / total_ref
            ws = kernels.get(name, 0) / steps
            rows.append({"name": name[:120], "share": share, "ratio": ws / (v / ref_steps) if v else None})
        out["kernels"] = rows[:12]
        big = [abs(x["ratio"] - 1) for x in rows if x["share"] >= 0.01 and x["ratio"] is not None]
        out["worst_kernel_error"] = max(big) if big else None
        out["only_in_warpscope_ns"] = sum(v for k, v in kernels.items() if k not in ref_kernels)
    return out


def collect_profiler(api, runs):
    injected = [x for x in runs if x["name"] == "profiler_inside" and x["config"] == "adaptive" and x["result"]]
    plain = [x for x in runs if x["name"] == "profiler_inside" and x["config"] == "none" and x["result"]]
    out = []
    for run in injected:
        r = run["result"]
        pid = r["pid"]
        entry = {"round": run["round"], "pid": pid, "kernels_injected": r.get("profiler_kernels"),
                 "cuda_events_injected": r.get("profiler_cuda_events"), "warpscope_lines": run["warpscope_lines"]}
        base = next((p["result"] for p in plain if p["round"] == run["round"]), plain[0]["result"] if plain else None)
        if base:
            entry["kernels_plain"] = base.get("profiler_kernels")
            if base.get("profiler_kernels"):
                entry["kernels_diff"] = (r.get("profiler_kernels", 0) - base["profiler_kernels"]) / base["profiler_kernels"]
        for ph in ("before", "profiled", "after"):
            if ph not in r or "end_ms" not in r[ph]:
                continue
            # Whole seconds inside the phase: the store keeps GPU time per second.
            lo, hi = second_floor(r[ph]["start_ms"]) + 1000, second_floor(r[ph]["end_ms"])
            if hi <= lo:
                continue
            total = gpu_total(api, pid, lo, hi)
            table = get_json(api, "/api/v1/gpu/kernels", selector=sel(pid), **{"from": lo, "to": hi}) or {}
            entry[ph] = {"seconds": (hi - lo) / 1000, "ws_gpu_ns": total, "ws_gpu_ns_per_s": total / ((hi - lo) / 1000)
                         if total is not None else None, "recorded_kernels": table.get("activities")}
        b, a = entry.get("before", {}), entry.get("after", {})
        if b.get("ws_gpu_ns_per_s") and a.get("ws_gpu_ns_per_s") is not None:
            entry["after_over_before"] = a["ws_gpu_ns_per_s"] / b["ws_gpu_ns_per_s"]
        entry["resumed"] = bool(a.get("ws_gpu_ns") and a.get("recorded_kernels"))
        out.append(entry)
    return out


def collect_insights(api, runs, work):
    out = []
    for run in runs:
        if run["name"] not in ("starved", "busy_sync") or not run["result"]:
            continue
        r = run["result"]
        lo, hi = (r["start_ms"] // 1000 + 2) * 1000, second_floor(r["end_ms"])
        if hi <= lo:
            lo, hi = second_floor(r["start_ms"]), second_floor(r["end_ms"]) + 1000
        answer = get_json(api, "/api/v1/insights", **{"from": lo, "to": hi}) or {}
        with open(f"{work}/answers/insights_{run['name']}.r{run['round']}.json", "w") as f:
            json.dump(answer, f)
        found = answer.get("insights", [])
        mine = [x for x in found if x.get("target", {}).get("pid") in (str(r["pid"]), None)]
        entry = {"name": run["name"], "round": run["round"], "pid": r["pid"], "seconds": (hi - lo) / 1000,
                 "insights": [{"kind": x["kind"], "severity": x.get("severity"), "saving_gpu_seconds": x.get("saving_gpu_seconds"),
                               "pid": x.get("target", {}).get("pid"),
                               "functions": [f["name"] for f in x.get("functions", [])[:3]]} for x in found[:8]]}
        if mine:
            entry["top"] = entry["insights"][found.index(mine[0])]
        starved = [i for i, x in enumerate(found) if x["kind"] == "gpu_starved_by_cpu"
                   and x.get("target", {}).get("pid") == str(r["pid"])]
        entry["starved_present"] = bool(starved)
        if starved:
            x = found[starved[0]]
            names = [f["name"] for f in x.get("functions", [])]
            entry["starved_names_function"] = any("slow_cpu_preprocess" in n for n in names[:1])
            entry["starved_function_rank"] = next((i + 1 for i, n in enumerate(names) if "slow_cpu_preprocess" in n), None)
            entry["starved_first_by_saving"] = starved[0] == 0
        out.append(entry)
    return out


def collect_overhead(runs):
    by = {}
    rounds = {}
    for run in runs:
        if run["name"] != "launch_heavy":
            continue
        for loop, v in run["it_per_s"].items():
            by.setdefault(loop, {}).setdefault(run["config"], []).append(v)
            rounds.setdefault((run["round"], run["index"], loop), {})[run["config"]] = v
    out = {}
    for loop, configs in by.items():
        none, inj = configs.get("none", []), configs.get("adaptive", [])
        per_round = [d["adaptive"] / d["none"] for (_, _, lp), d in sorted(rounds.items())
                     if lp == loop and "adaptive" in d and d.get("none")]
        out[loop] = {"none": none, "adaptive": inj,
                     "ratio_of_medians": statistics.median(inj) / statistics.median(none) if none and inj else None,
                     "median_round_ratio": statistics.median(per_round) if per_round else None,
                     "round_ratios": per_round}
    return out


def collect_memory(work):
    """The default agent's memory: RSS samples (real_suite.sh's sampler), its
    VmHWM at the end, and the bytes each cache held at the end (/metrics)."""
    samples = []
    try:
        for line in open(f"{work}/agent_rss.tsv"):
            f = line.split()
            if len(f) == 4:
                samples.append([int(x) for x in f])
    except OSError:
        pass
    hwm_kb = None
    try:
        m = re.search(r"VmHWM:\s+(\d+)", open(f"{work}/agent_alive.txt").read())
        hwm_kb = int(m.group(1)) if m else None
    except OSError:
        pass
    caches = {}
    try:
        for line in open(f"{work}/metrics.txt"):
            m = re.match(r'warpscope_agent_cache_(bytes|budget_bytes)\{.*cache="([^"]+)".*\} ([0-9.eE+-]+)$',
                         line.strip())
            if m:
                caches.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
    except OSError:
        pass
    return {"samples": samples, "hwm_kb": hwm_kb, "caches": caches}


def guarded(errors, what, fn, *args, default=None):
    """fn(*args), or default when it raised: one broken answer costs its own section only."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        errors.append(f"{what}: {type(e).__name__}: {e}"[:300])
        return default


def collect(work, api):
    errors = []
    os.makedirs(f"{work}/answers", exist_ok=True)
    info = {}
    try:
        for line in open(f"{work}/info.env"):
            k, _, v = line.rstrip("\n").partition("=")
            info[k] = v
    except OSError:
        pass
    runs, skipped = [], []
    for line in open(f"{work}/runs.tsv"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "skipped":
            skipped.append(f[1])
            continue
        part, name, config, rc, ms, log, rnd = f[:7]
        idx = re.search(r"\.(\d+)\.log$", log)
        parsed = parse_log(log)
        rc = int(rc)
        res = parsed["json"]
        run = {"part": part, "name": name, "config": config, "round": int(rnd), "index": int(idx.group(1)) if idx else 0,
               "rc": rc, "ms": int(ms), "log": log.rpartition("/")[2], "timed_out": rc in (124, 137),
               "signal": rc - 128 if rc > 128 and rc not in (124, 137) else None,
               "status": res.get("status") if res else None, "result": res, "cuda_errors": parsed["cuda_errors"],
               "crash_lines": parsed["crash_lines"], "warpscope_lines": parsed["warpscope_lines"],
               "it_per_s": parsed["it_per_s"]}
        if res and config != "none" and "pid" in res and "start_ms" in res and "end_ms" in res:
            run["ws_gpu_ns"] = gpu_total(api, res["pid"], second_floor(res["start_ms"]), second_floor(res["end_ms"]) + 2000)
        runs.append(run)
    refs = {x["round"]: x["result"] for x in runs if x["name"] == "train_reference" and x["result"]
            and x["result"].get("status") == "ok"}
    accuracy = []
    for run in runs:
        if run["name"] == "train" and run["result"] and run["result"].get("status") == "ok":
            ref = refs.get(run["round"]) or next(iter(refs.values()), None)
            a = guarded(errors, f"accuracy {run['config']}", collect_train, api, run, ref, work)
            if a:
                accuracy.append(a)
    threads = []
    for run in runs:
        if run["name"] == "threads" and run["result"]:
            r = run["result"]
            collapsed = get(api, "/api/v1/profile", type="gpu_time", selector=sel(r["pid"]), format="collapsed",
                            **{"from": second_floor(r["start_ms"]), "to": second_floor(r["end_ms"]) + 2000}) or ""
            ns = {"thread_matmul_work": 0, "thread_elementwise_work": 0, "other": 0}
            for line in collapsed.splitlines():
                stack, _, v = line.rpartition(" ")
                if v.isdigit():
                    key = next((k for k in ns if k in stack.split(";")), "other")
                    ns[key] += int(v)
            threads.append({"round": run["round"], "ws_gpu_ns": ns})
    return {"version": 1, "info": info, "skipped": skipped, "runs": runs, "accuracy": accuracy,
            "reference": [{"round": k, **{f: v.get(f) for f in ("steps", "kernel_ns_per_step", "kernels_per_step",
                                                                  "sites_ns", "copies_ns", "model")}}
                          for k, v in refs.items()],
            "profiler": guarded(errors, "profiler", collect_profiler, api, runs, default=[]),
            "insights": guarded(errors, "insights", collect_insights, api, runs, work, default=[]),
            "overhead": guarded(errors, "overhead", collect_overhead, runs, default={}), "threads": threads,
            "errors": errors,
            "counters": {"agent": counters(f"{work}/metrics.txt"),
                         "agent_exact": counters(next(iter(sorted(glob.glob(f"{work}/metrics_exact.*.txt"))), ""))},
            "memory": guarded(errors, "memory", collect_memory, work, default={}),
            "agent_end": open(f"{work}/agent_alive.txt").read().strip() if os.path.exists(f"{work}/agent_alive.txt")
            else "agent not running at the end"}


# ---------------------------------------------------------------- report

def fmt(v, spec=".3f", none="–"):
    return none if v is None else format(v, spec)


def pct(v, none="–"):
    return none if v is None else f"{100 * v:.2f} %"


def verdict(ok):
    return "PASS" if ok else "**FAIL**"


def report(res):
    lines, checks = [], []
    info = res.get("info", {})
    lines.append(f"### Real-framework suite ({info.get('date', '?')}, {info.get('gpu', '?')})")
    lines.append("")
    lines.append(f"`{info.get('command', 'bench/gpu/real_suite.sh DIR')}`; {info.get('software', '')}; "
                 f"agent at default settings; wall time {info.get('wall_s', '?')} s.")
    if res.get("skipped"):
        lines.append(f"Skipped for time: {', '.join(res['skipped'])}.")
    if res.get("errors"):
        lines.append(f"Collecting failed for: {'; '.join(res['errors'])}.")
    lines.append("")

    # Runs, by workload.
    lines.append("| workload | runs | ok | non-zero exit | signals | timeouts | CUDA errors in output | measurement (median) |")
    lines.append("|---|---|---|---|---|---|---|---|")
    by = {}
    for r in res["runs"]:
        by.setdefault((r["name"], r["config"]), []).append(r)
    for (name, config), rs in sorted(by.items(), key=lambda kv: (kv[1][0]["part"], kv[0])):
        if name == "launch_heavy":
            continue
        bad_exit = sum(1 for r in rs if r["rc"] != 0 and not r["timed_out"] and r["signal"] is None)
        signals = [r["signal"] for r in rs if r["signal"] is not None]
        timeouts = sum(1 for r in rs if r["timed_out"])
        cuda = sum(r["cuda_errors"] for r in rs)
        ok = sum(1 for r in rs if r["rc"] == 0 and r["status"] in ("ok", "skipped") and not r["cuda_errors"])
        skipped = sum(1 for r in rs if r["status"] == "skipped")
        lines.append(f"| {name} ({config}) | {len(rs)} | {ok}{f' ({skipped} skipped)' if skipped else ''} | {bad_exit} | "
                     f"{','.join(map(str, signals)) or 0} | {timeouts} | {cuda} | {measurement(name, rs)} |")
        checks.append((f"{name} ({config}): every run ok", ok == len(rs)))
    lines.append("")

    # Accuracy.
    if res.get("accuracy"):
        lines.append("**GPU time per training step** (real_train.py; warpscope's gpu_time for the process over the "
                     "measured steps ÷ steps, against torch.profiler's kernel time per step in a separate process):")
        lines.append("")
        lines.append("| mode | steps | warpscope ms/step | torch.profiler ms/step | ratio | target | largest error, kernels ≥ 1 % |")
        lines.append("|---|---|---|---|---|---|---|")
        for a in res["accuracy"]:
            target = TARGETS.get(a["config"], 0.05)
            ok = a.get("ratio") is not None and abs(a["ratio"] - 1) <= target
            checks.append((f"training GPU time, {a['config']}: ratio within {target:.0%}", ok))
            lines.append(f"| {a['config']} | {a['steps']} ({a['seconds']:.0f} s) | {fmt(ns_ms(a.get('ws_ns_per_step')))} | "
                         f"{fmt(ns_ms(a.get('ref_ns_per_step')))} | **{fmt(a.get('ratio'), '.4f')}** | ±{target:.0%} | "
                         f"{pct(a.get('worst_kernel_error'))} |")
        lines.append("")
        first = res["accuracy"][0]
        if first.get("kernels"):
            lines.append("| kernel (share of the reference) | " + " | ".join(f"{a['config']} ÷ reference" for a in res["accuracy"]) + " |")
            lines.append("|---|" + "---|" * len(res["accuracy"]))
            for k in first["kernels"][:8]:
                cells = [fmt(next((x["ratio"] for x in a.get("kernels", []) if x["name"] == k["name"]), None), ".4f")
                         for a in res["accuracy"]]
                lines.append(f"| {k['name'][:70]} ({100 * k['share']:.1f} %) | " + " | ".join(cells) + " |")
            lines.append("")
        ref = (res.get("reference") or [{}])[0]
        lines.append("Per call site (share of the process's GPU time; warpscope from the collapsed stacks, backward = "
                     "stacks under `backward_pass` + the autograd thread's; torch.profiler by the launch's record_function range):")
        lines.append("")
        lines.append("| site | " + " | ".join(f"warpscope {a['config']}" for a in res["accuracy"]) + " | torch.profiler |")
        lines.append("|---|" + "---|" * (len(res["accuracy"]) + 1))
        ref_sites = ref.get("sites_ns") or {}
        ref_total = sum(ref_sites.values()) or 1
        for site in ("forward_pass", "backward", "optimizer_step", "other"):
            cells = []
            for a in res["accuracy"]:
                ws = a["ws_sites_ns"]
                total = sum(ws.values()) or 1
                v = ws["backward_pass"] + ws["autograd_thread"] if site == "backward" else ws.get(site, 0)
                cells.append(f"{100 * v / total:.2f} %")
            rv = ref_sites.get("backward_pass", 0) if site == "backward" else ref_sites.get(site, 0)
            lines.append(f"| {site} | " + " | ".join(cells) + f" | {100 * rv / ref_total:.2f} % |")
        lines.append("")
        for a in res["accuracy"]:
            ws = a["ws_sites_ns"]
            back = ws["backward_pass"] + ws["autograd_thread"]
            if back:
                lines.append(f"- {a['config']}: of the backward pass's GPU time, {100 * ws['backward_pass'] / back:.1f} % "
                             f"sits under the Python frame that called backward() (`backward_pass`), "
                             f"{100 * ws['autograd_thread'] / back:.1f} % under the autograd thread "
                             f"(`Engine::thread_main`/`thread_init`, no Python frame).")
        if ref:
            lines.append(f"- Model: {ref.get('model') or res['accuracy'][0].get('model')}; "
                         f"{fmt(ref.get('kernels_per_step'), '.0f')} kernels per step.")
        lines.append("")

    # torch.profiler inside an injected process.
    for p in res.get("profiler", []):
        ok_count = p.get("kernels_diff") is not None and abs(p["kernels_diff"]) <= 0.01
        checks.append(("torch.profiler inside: kernel count within 1 % of the non-injected run", ok_count))
        checks.append(("torch.profiler inside: warpscope's GPU time resumes after the session", p.get("resumed", False)))
        lines.append("**torch.profiler inside an injected process** (real_profiler_inside.py): torch.profiler recorded "
                     f"{p.get('kernels_injected')} kernels injected, {p.get('kernels_plain')} without the library "
                     f"(diff {pct(p.get('kernels_diff'))}, target ±1 %).")
        lines.append("")
        lines.append("| phase | seconds | warpscope GPU ms/s | kernels recorded by warpscope |")
        lines.append("|---|---|---|---|")
        for ph in ("before", "profiled", "after"):
            d = p.get(ph)
            if d:
                lines.append(f"| {ph} | {d['seconds']:.0f} | {fmt(ns_ms(d.get('ws_gpu_ns_per_s')), '.1f')} | {d.get('recorded_kernels')} |")
        lines.append("")
        lines.append(f"After ÷ before: {fmt(p.get('after_over_before'))}; resumed: {p.get('resumed')}."
                     + (f" The library said: `{p['warpscope_lines'][0]}`" if p.get("warpscope_lines") else ""))
        lines.append("")

    # Insights.
    if res.get("insights"):
        lines.append("| workload | top insight (this process) | severity | saving GPU-s | gpu_starved_by_cpu | names `slow_cpu_preprocess` first | first by saving |")
        lines.append("|---|---|---|---|---|---|---|")
        for i in res["insights"]:
            top = i.get("top") or {}
            lines.append(f"| {i['name']} ({i['seconds']:.0f} s) | {top.get('kind', 'none')} | {top.get('severity', '–')} | "
                         f"{fmt(top.get('saving_gpu_seconds'), '.1f')} | {i['starved_present']} | "
                         f"{i.get('starved_names_function', '–')} (rank {i.get('starved_function_rank', '–')}) | "
                         f"{i.get('starved_first_by_saving', '–')} |")
            if i["name"] == "starved":
                checks.append(("starved: gpu_starved_by_cpu names slow_cpu_preprocess and is first by saving",
                               bool(i.get("starved_names_function") and i.get("starved_first_by_saving"))))
        lines.append("")
        for i in res["insights"]:
            kinds = ", ".join(f"{x['kind']} ({x['severity']}, {fmt(x['saving_gpu_seconds'], '.1f')} GPU-s"
                              f"{', ' + x['functions'][0] if x['functions'] else ''})" for x in i["insights"])
            lines.append(f"- {i['name']}: {kinds or 'no insight'}")
        lines.append("")

    # Overhead.
    if res.get("overhead"):
        lines.append("**Overhead** (launch_heavy.py, injected at default settings vs not, interleaved rounds):")
        lines.append("")
        lines.append("| loop | no profiling, it/s (median) | warpscope, it/s (median) | ratio of medians | median of round ratios | rounds |")
        lines.append("|---|---|---|---|---|---|")
        for loop, o in sorted(res["overhead"].items()):
            med = lambda v: statistics.median(v) if v else None  # noqa: E731
            lines.append(f"| {loop} | {fmt(med(o['none']), ',.1f')} | {fmt(med(o['adaptive']), ',.1f')} | "
                         f"**{fmt(o['ratio_of_medians'])}** | {fmt(o['median_round_ratio'])} | {len(o['round_ratios'])} |")
        lines.append("")

    # Counters.
    for who, c in (res.get("counters") or {}).items():
        if not c:
            continue
        shown = {k: v for k, v in c.items() if COUNTER_KEYS.search(k) and (v or k.startswith("cuda_lib_") or
                 "cupti" in k or "step_aside" in k or "graph" in k)}
        lines.append(f"**{who} counters** (/metrics at the end; every cuda_lib_*, cupti, step_aside and graph "
                     f"counter, the kernel and connection counters, drops that are not 0):")
        lines.append("")
        lines.append("| counter | value |")
        lines.append("|---|---|")
        for k in sorted(shown):
            lines.append(f"| {k} | {shown[k]:,.0f} |")
        lines.append("")
        drops = {k: v for k, v in c.items() if "dropped" in k and v}
        checks.append((f"{who}: nothing dropped", not drops))
    for t in res.get("threads", []):
        ns = t["ws_gpu_ns"]
        total = sum(ns.values()) or 1
        lines.append("Two threads on their own streams (real_threads.py), warpscope's GPU time by the launching "
                     "thread's function: " + ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in ns.items()) + ".")
        checks.append(("threads: GPU time under both threads' functions",
                       bool(ns.get("thread_matmul_work") and ns.get("thread_elementwise_work"))))
        lines.append("")
    mem = res.get("memory") or {}
    rss = [r[1] for r in mem.get("samples", [])]
    if rss:
        # Steady: the median over the second half of the run, once every
        # workload's binaries have been read.
        steady = statistics.median(rss[len(rss) // 2:])
        peak = max(mem.get("hwm_kb") or 0, max(rss))
        anon = max(r[2] for r in mem["samples"])
        lines.append(f"**Default agent's memory** ({len(rss)} samples, every 2 s): peak {peak / 1024:.1f} MB "
                     f"(VmHWM), steady {steady / 1024:.1f} MB (median RSS over the second half), "
                     f"largest anonymous RSS {anon / 1024:.1f} MB.")
        if mem.get("caches"):
            lines.append("")
            lines.append("| cache | bytes at the end | budget |")
            lines.append("|---|---|---|")
            for k, v in sorted(mem["caches"].items(), key=lambda kv: -kv[1].get("bytes", 0)):
                b = v.get("budget_bytes")
                lines.append(f"| {k} | {v.get('bytes', 0) / 1048576:.2f} MB | "
                             f"{'–' if not b else f'{b / 1048576:.0f} MB'} |")
        lines.append("")
    end = res.get("agent_end") or ""
    lines.append(f"Agent at the end: {' '.join(end.split())}.")
    checks.append(("agent alive at the end", "alive" in end))
    lines.append("")
    lines.append("| check | result |")
    lines.append("|---|---|")
    lines.extend(f"| {name} | {verdict(ok)} |" for name, ok in checks)
    return "\n".join(lines) + "\n"


def ns_ms(v):
    return None if v is None else v / 1e6


def measurement(name, rs):
    vals = [r["result"] for r in rs if r["result"] and r["result"].get("status") == "ok"]
    if not vals:
        return (rs[0]["result"] or {}).get("note", "") if rs[0]["result"] else ""
    med = lambda key: statistics.median(v[key] for v in vals if v.get(key) is not None)  # noqa: E731
    ws = [r["ws_gpu_ns"] for r in rs if r.get("ws_gpu_ns")]
    seen = f"; warpscope saw GPU time in {len(ws)} of {len(rs)}" if rs[0]["config"] != "none" else ""
    try:
        if name == "compile":
            return (f"inference {med_of(vals, 'inference', 'step_ms_median'):.3f} ms, training "
                    f"{med_of(vals, 'training', 'step_ms_median'):.3f} ms/step; compile {med('compile_inference_s'):.1f} s{seen}")
        if name == "graph_py":
            return f"{med('replays'):,.0f} replays, {med('step_ms_median'):.4f} ms/replay, {med('captures'):.0f} captures{seen}"
        if name == "graph_cpp":
            return (f"{med('iterations'):,.0f} iterations, {med('updates'):.0f} exec updates "
                    f"({med('updates_refused'):.0f} refused), graph A ready at {med('graph_a_ready_ms'):.0f} ms{seen}")
        if name == "jax":
            return f"{med('steps'):.0f} steps, {med('step_ms_median'):.3f} ms/step{seen}"
        if name in ("loader", "busy_sync", "train"):
            extra = f", GPU busy {100 * med('gpu_busy_share'):.0f} %" if name == "busy_sync" else ""
            return f"{med('steps'):,.0f} steps, {med('step_ms_median'):.3f} ms/step{extra}{seen}"
        if name == "threads":
            return (f"matmul {med_of(vals, 'matmul', 'steps'):,.0f} / elementwise {med_of(vals, 'elementwise', 'steps'):,.0f} "
                    f"steps{seen}")
        if name == "profiler_inside":
            return f"{med('profiler_kernels'):,.0f} kernels in torch.profiler{seen}"
        if name == "starved":
            return f"{med('steady_steps'):.0f} starved + {med('busy_steps'):.0f} busy steps, {med('stalled_s'):.1f} s stalled{seen}"
        if name == "train_reference":
            return f"{med('steps'):.0f} steps, {med('kernel_ns_per_step') / 1e6:.3f} ms of kernels/step"
    except (KeyError, TypeError, ValueError, statistics.StatisticsError):
        pass
    return seen.lstrip("; ")


def med_of(vals, outer, key):
    return statistics.median(v[outer][key] for v in vals if outer in v)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "collect":
        json.dump(collect(sys.argv[2], sys.argv[3]), sys.stdout, indent=1)
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        sys.stdout.write(report(json.load(open(sys.argv[2]))))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
