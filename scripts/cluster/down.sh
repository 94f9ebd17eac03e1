#!/usr/bin/env bash
# Stops everything scripts/cluster/up.sh started in DIR and removes DIR.
#
#   bash scripts/cluster/down.sh DIR
#
# Frozen processes (ctl.sh freeze-leader) are continued first; then Patroni is SIGKILLed, each
# PostgreSQL gets an immediate shutdown and etcd a SIGTERM (the data is thrown away); whatever
# of the cluster still runs after CLUSTER_DOWN_TIMEOUT seconds (default 3: e.g. a pg_rewind
# that Patroni had started) is SIGKILLed. A process belongs to the cluster when its working
# directory is inside DIR, so nothing else (the machine's own PostgreSQL included) is ever
# signalled. DIR is removed only when it carries up.sh's marker file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
cluster_load "$1"
cd /   # this script is not one of the processes it stops
TIMEOUT="${CLUSTER_DOWN_TIMEOUT:-3}"
started=$(date +%s.%N)

mapfile -t all < <(cluster_pids)
[ ${#all[@]} -eq 0 ] || kill -CONT "${all[@]}" 2>/dev/null || true

# DIR is removed next, so nothing is gained by shutting down gracefully: Patroni is SIGKILLed
# (it would otherwise restart its PostgreSQL or wait on its peers), each postmaster gets
# PostgreSQL's immediate shutdown (SIGQUIT: it stops its children at once), etcd a SIGTERM.
for node in $NODES; do
  if pid=$(patroni_pid "$node"); then kill -KILL "$pid" 2>/dev/null || true; fi
done
for node in $NODES; do
  if pid=$(postmaster_pid "$node"); then kill -QUIT "$pid" 2>/dev/null || true; fi
done
etcd=$(cat "$DIR/etcd.pid" 2>/dev/null || true)
if [ -n "$etcd" ] && pid_in_cluster "$etcd"; then kill -TERM "$etcd" 2>/dev/null || true; fi

deadline=$(( $(date +%s) + TIMEOUT ))
killed=0
while :; do
  mapfile -t all < <(cluster_pids)
  [ ${#all[@]} -gt 0 ] || break
  # A PostgreSQL that was starting (its postmaster.pid written only now) is stopped too.
  for node in $NODES; do
    if pid=$(postmaster_pid "$node"); then kill -QUIT "$pid" 2>/dev/null || true; fi
  done
  if [ "$(date +%s)" -ge "$deadline" ]; then
    if [ "$killed" = 1 ]; then
      echo "down.sh: still running after SIGKILL: ${all[*]}; $DIR left in place" >&2
      exit 1
    fi
    echo "down.sh: SIGKILL to what is left: $(ps -o pid=,comm= -p "$(IFS=,; echo "${all[*]}")" | tr -s ' \n' ' ')" >&2
    kill -KILL "${all[@]}" 2>/dev/null || true
    killed=1
    deadline=$(( $(date +%s) + 5 ))
  fi
  sleep 0.2
done

rm -rf "$DIR"
printf 'cluster in %s stopped and removed after %.1fs\n' "$DIR" "$(echo "$(date +%s.%N) - $started" | bc)"
