# The VM checks' helpers, sourced by check_kernel.sh (inside the guest) and
# check_arm64.sh (on the host, over what the guest recorded): a check's
# result line and the shares read from folded stacks ("frame;frame;... count",
# root first).

check() {  # NAME OK(0/1) DETAILS: prints "== check NAME ok|FAIL: DETAILS"
  if [[ $2 == 1 ]]; then echo "== check $1 ok: $3"; else echo "== check $1 FAIL: $3"; fi
}
# The share of samples whose line matches every regexp given, and the total.
share() {  # FILE REGEXP...
  local f=$1; shift
  awk -v pats="$(printf "%s\x1f" "$@")" '
    BEGIN { n = split(pats, p, "\x1f") - 1 }
    { c = $NF; total += c; ok = 1; for (i = 1; i <= n; i++) if ($0 !~ p[i]) ok = 0; if (ok) hit += c }
    END { printf "%.4f %d\n", total ? hit / total : 0, total }' "$f"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a + b ? a / (a + b) : 0 }'; }  # A / (A + B)
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' && echo 1 || echo 0; }
