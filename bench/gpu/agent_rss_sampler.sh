#!/usr/bin/env bash
# GPU host helper of real_suite.sh and crash_split.sh: samples an agent's
# memory every 2 s while it lives.
#   agent_rss_sampler.sh PID METRICS_ADDR DIR [T0]
# Appends "seconds since T0, VmRSS, RssAnon, RssFile" (kB) to DIR/agent_rss.tsv;
# at each new VmRSS high, the agent's /metrics (the caches' bytes then) goes
# to DIR/metrics_at_peak.txt: what the peak was made of.
pid=$1 metrics=$2 dir=$3 t0=${4:-$(date +%s)}
high=0
while kill -0 "$pid" 2>/dev/null; do
  line=$(awk -v t=$(( $(date +%s) - t0 )) '/^(VmRSS|RssAnon|RssFile):/ {v[$1]=$2}
    END {if ("VmRSS:" in v) print t "\t" v["VmRSS:"] "\t" v["RssAnon:"] "\t" v["RssFile:"]}' \
    "/proc/$pid/status" 2>/dev/null)
  if [[ -n $line ]]; then
    echo "$line" >> "$dir/agent_rss.tsv"
    rss=$(cut -f2 <<<"$line")
    if (( rss > high )); then
      high=$rss
      curl -s -m 2 "http://$metrics/metrics" > "$dir/metrics_at_peak.tmp" &&
        { echo "# at ${line%%$'\t'*} s, VmRSS $rss kB"; cat "$dir/metrics_at_peak.tmp"; } > "$dir/metrics_at_peak.txt"
    fi
  fi
  sleep 2
done
