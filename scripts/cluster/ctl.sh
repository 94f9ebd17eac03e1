#!/usr/bin/env bash
# Helpers for a cluster that scripts/cluster/up.sh started in DIR.
#
#   ctl.sh DIR leader          the leader's name and PostgreSQL port ("node2 15433"), from etcd
#   ctl.sh DIR pids NODE       the node's Patroni pid and postmaster pid (from postmaster.pid in its
#                              data directory), "-" for one that does not run
#   ctl.sh DIR kill-leader     SIGKILL the leader's Patroni and postmaster (prints the leader's name)
#   ctl.sh DIR freeze-leader   SIGSTOP the leader's Patroni, postmaster and all the postmaster's
#                              children (each in its own process group, so by pid): a host that
#                              hangs (prints the leader's name)
#   ctl.sh DIR thaw NODE       SIGCONT everything of NODE (what freeze-leader stopped, and more)
#   ctl.sh DIR wait-leader OLD wait until a node other than OLD leads and commits a write (deadline
#                              CLUSTER_WAIT_TIMEOUT, default 60 s); prints its name, port, seconds
#   ctl.sh DIR start NODE      start NODE's Patroni again (after kill-leader): it rejoins as a replica
#   ctl.sh DIR apply-delay D   the standbys apply each commit D (as PostgreSQL shows it: 15s, 0) after the
#                              primary made it (recovery_min_apply_delay, through Patroni's
#                              configuration): a replica behind by D; waits until every standby has it
#   ctl.sh DIR wait-standby NODE  wait until NODE runs as a standby and a synchronous standby
#                              runs (deadline CLUSTER_WAIT_TIMEOUT, default 60 s); prints seconds
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
[ $# -ge 2 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
cluster_load "$1"
cmd=$2
shift 2

need_node() { [ $# -ge 1 ] || { echo "$cmd: give a node ($NODES)" >&2; exit 2; }; node_check "$1"; }

current_leader() {
  local name
  name=$(leader_name)
  [ -n "$name" ] || { echo "no leader now" >&2; exit 1; }
  echo "$name"
}

case "$cmd" in
  leader)
    name=$(current_leader)
    echo "$name $(pg_port "$name")"
    ;;
  pids)
    need_node "$@"
    echo "$(patroni_pid "$1" || echo -) $(postmaster_pid "$1" || echo -)"
    ;;
  kill-leader)
    name=$(current_leader)
    pids=()
    p=$(patroni_pid "$name") && pids+=("$p")
    p=$(postmaster_pid "$name") && pids+=("$p")
    [ ${#pids[@]} -gt 0 ] || { echo "the leader $name has no process running here" >&2; exit 1; }
    kill -KILL "${pids[@]}"
    echo "$name"
    ;;
  freeze-leader)
    name=$(current_leader)
    pm=$(postmaster_pid "$name") || { echo "the leader $name has no postmaster running" >&2; exit 1; }
    pids=("$pm")
    p=$(patroni_pid "$name") && pids+=("$p")
    # The postmaster first: stopped, it starts no new child while its children are listed.
    kill -STOP "${pids[@]}"
    mapfile -t kids < <(children_of "$pm")
    [ ${#kids[@]} -eq 0 ] || kill -STOP "${kids[@]}" 2>/dev/null || true
    echo "$name"
    ;;
  thaw)
    need_node "$@"
    pids=()
    p=$(patroni_pid "$1") && pids+=("$p")
    if pm=$(postmaster_pid "$1"); then
      pids+=("$pm")
      mapfile -t -O "${#pids[@]}" pids < <(children_of "$pm")
    fi
    [ ${#pids[@]} -eq 0 ] || kill -CONT "${pids[@]}" 2>/dev/null || true
    ;;
  wait-standby)
    need_node "$@"
    node=$1
    timeout="${CLUSTER_WAIT_TIMEOUT:-60}"
    start=$(date +%s.%N)
    deadline=$(( $(date +%s) + timeout ))
    while :; do
      for n in node1 node2 node3; do
        port=$(rest_port "$n")
        json=$(curl -fsS -m 1 "http://127.0.0.1:$port/cluster" 2>/dev/null) || continue
        ok=$(jq -r --arg n "$node" '
          ([.members[] | select(.name == $n and (.role == "replica" or .role == "sync_standby")
                                and (.state == "running" or .state == "streaming"))] | length) == 1
          and ([.members[] | select(.role == "sync_standby" and (.state == "running" or .state == "streaming"))] | length) >= 1' <<<"$json")
        if [ "$ok" = true ]; then
          printf '%.1f\n' "$(echo "$(date +%s.%N) - $start" | bc)"
          exit 0
        fi
      done
      if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "$node is not a running standby beside a synchronous one within ${timeout}s" >&2
        exit 1
      fi
      sleep 0.3
    done
    ;;
  wait-leader)
    need_node "$@"
    old=$1
    timeout="${CLUSTER_WAIT_TIMEOUT:-60}"
    start=$(date +%s.%N)
    deadline=$(( $(date +%s) + timeout ))
    while :; do
      name=$(leader_name)
      if [ -n "$name" ] && [ "$name" != "$old" ] && writable "$name"; then
        printf '%s %s %.1f\n' "$name" "$(pg_port "$name")" "$(echo "$(date +%s.%N) - $start" | bc)"
        exit 0
      fi
      if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "no writable leader other than $old within ${timeout}s (leader key: ${name:-none})" >&2
        exit 1
      fi
      sleep 0.2
    done
    ;;
  apply-delay)
    [ $# -eq 1 ] || { echo "apply-delay: give a delay as PostgreSQL shows it (15s, 0)" >&2; exit 2; }
    name=$(current_leader)
    curl -fsS -m 5 -X PATCH "http://127.0.0.1:$(rest_port "$name")/config" \
      -d "{\"postgresql\":{\"parameters\":{\"recovery_min_apply_delay\":\"$1\"}}}" >/dev/null
    deadline=$(( $(date +%s) + ${CLUSTER_WAIT_TIMEOUT:-60} ))
    for n in $NODES; do
      { [ "$n" != "$name" ] && postmaster_pid "$n" >/dev/null; } || continue
      until [ "$(psql -h 127.0.0.1 -p "$(pg_port "$n")" -U postgres -d postgres -qAtc 'show recovery_min_apply_delay' 2>/dev/null)" = "$1" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "$n did not take recovery_min_apply_delay=$1" >&2; exit 1; }
        sleep 0.2
      done
    done
    ;;
  start)
    need_node "$@"
    if patroni_pid "$1" >/dev/null; then echo "$1's Patroni already runs" >&2; exit 1; fi
    start_patroni "$1"
    ;;
  *)
    echo "unknown command '$cmd'" >&2
    sed -n '2,19p' "$0" >&2
    exit 2
    ;;
esac
