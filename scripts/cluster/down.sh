#!/usr/bin/env bash
# Stops everything scripts/cluster/up.sh started in DIR and removes DIR.
#
#   bash scripts/cluster/down.sh DIR
#
# Frozen processes (ctl.sh freeze-leader) are continued first; each Patroni is asked to stop
# (SIGTERM: it stops its PostgreSQL), then PostgreSQL servers left without their Patroni get a fast
# shutdown, etcd a SIGTERM; whatever of the cluster still runs after CLUSTER_DOWN_TIMEOUT seconds
# (default 20) is SIGKILLed. A process belongs to the cluster when its working directory is inside
# DIR, so nothing else (the machine's own PostgreSQL included) is ever signalled. DIR is removed
# only when it carries up.sh's marker file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
cluster_load "$1"
TIMEOUT="${CLUSTER_DOWN_TIMEOUT:-20}"
started=$(date +%s)

mapfile -t all < <(cluster_pids)
[ ${#all[@]} -eq 0 ] || kill -CONT "${all[@]}" 2>/dev/null || true

for node in $NODES; do
  if pid=$(patroni_pid "$node"); then
    kill -TERM "$pid" 2>/dev/null || true
  elif pid=$(postmaster_pid "$node"); then
    kill -INT "$pid" 2>/dev/null || true   # PostgreSQL's fast shutdown
  fi
done

# etcd last but one: Patroni needs it to stop cleanly.
deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  left=0
  for node in $NODES; do
    if patroni_pid "$node" >/dev/null; then
      left=1
    elif pid=$(postmaster_pid "$node"); then
      left=1
      kill -INT "$pid" 2>/dev/null || true
    fi
  done
  if [ "$left" = 0 ] || [ "$(date +%s)" -ge "$deadline" ]; then break; fi
  sleep 0.2
done
etcd=$(cat "$DIR/etcd.pid" 2>/dev/null || true)
if [ -n "$etcd" ] && pid_in_cluster "$etcd"; then kill -TERM "$etcd" 2>/dev/null || true; fi

killed=0
while :; do
  mapfile -t all < <(cluster_pids)
  [ ${#all[@]} -gt 0 ] || break
  if [ "$(date +%s)" -ge "$deadline" ]; then
    if [ "$killed" = 1 ]; then
      echo "down.sh: still running after SIGKILL: ${all[*]}; $DIR left in place" >&2
      exit 1
    fi
    echo "down.sh: SIGKILL to what is left: ${all[*]}" >&2
    kill -KILL "${all[@]}" 2>/dev/null || true
    killed=1
    deadline=$(( $(date +%s) + 5 ))
  fi
  sleep 0.2
done

rm -rf "$DIR"
echo "cluster in $DIR stopped and removed after $(( $(date +%s) - started ))s"
