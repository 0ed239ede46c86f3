# Sourced by scripts/images.sh and the container tests: points podman at a
# containers.conf of warpscope's own (nothing in /etc is changed) when the
# caller has not chosen one, for hosts where podman's defaults fail:
#  - runc, which also copes with hybrid cgroup v1/v2 hierarchies (crun refuses them);
#  - container rlimits within this process's hard limits: podman asks for
#    nofile 1048576 by default, which needs CAP_SYS_RESOURCE.
# Both are harmless where the defaults would work.
if [[ -z "${CONTAINERS_CONF:-}" ]]; then
  _ws_conf_dir=$(mktemp -d)
  _ws_nofile=$(ulimit -Hn)
  [[ "$_ws_nofile" == unlimited ]] && _ws_nofile=1048576
  _ws_nproc=$(ulimit -Hu)
  [[ "$_ws_nproc" == unlimited || "$_ws_nproc" -gt 32768 ]] && _ws_nproc=32768
  cat > "$_ws_conf_dir/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$_ws_nofile:$_ws_nofile", "nproc=$_ws_nproc:$_ws_nproc"]
[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF="$_ws_conf_dir/containers.conf"
  unset _ws_conf_dir _ws_nofile _ws_nproc
fi
