# shellcheck shell=bash
# Shared by ctl.sh and down.sh (sourced, not run): finds the processes of a cluster that up.sh
# started in DIR, checking each recorded pid still belongs to it (a pid can be reused).
# Every process up.sh starts runs with its working directory inside DIR (PostgreSQL's in its
# data directory), which is how a process is recognised as the cluster's.

cluster_load() {
  [ -n "${1:-}" ] || { echo "usage: $0 DIR ..." >&2; exit 2; }
  [ -d "$1" ] || { echo "$1: no such directory" >&2; exit 2; }
  DIR="$(cd "$1" && pwd)"
  if [ ! -f "$DIR/.malipo-cluster" ] || [ ! -f "$DIR/cluster.env" ]; then
    echo "$DIR was not made by scripts/cluster/up.sh" >&2
    exit 2
  fi
  # shellcheck source=/dev/null
  . "$DIR/cluster.env"
}

# Whether PID is alive and its working directory is DIR or inside it.
pid_in_cluster() {
  local cwd
  cwd=$(readlink "/proc/$1/cwd" 2>/dev/null) || return 1
  [ "$cwd" = "$DIR" ] || [ "${cwd#"$DIR"/}" != "$cwd" ]
}

# Every live process of the cluster (working directory inside DIR), one pid a line.
cluster_pids() {
  find /proc -mindepth 2 -maxdepth 2 -name cwd \( -lname "$DIR" -o -lname "$DIR/*" \) 2>/dev/null \
    | cut -d/ -f3 | grep -vx "$$" || true
}

node_check() {
  case " $NODES " in *" $1 "*) ;; *) echo "unknown node '$1' (nodes: $NODES)" >&2; exit 2 ;; esac
}

pg_port() { local v="PG_PORT_$1"; echo "${!v}"; }
rest_port() { local v="REST_PORT_$1"; echo "${!v}"; }

# The node's Patroni pid, if it runs.
patroni_pid() {
  local pid
  pid=$(cat "$DIR/$1/patroni.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$DIR/$1" ] \
    && grep -qa patroni "/proc/$pid/cmdline" && echo "$pid"
}

# The node's postmaster pid, from the first line of postmaster.pid in its data directory, if it runs.
postmaster_pid() {
  local pid
  pid=$(head -n1 "$DIR/$1/data/postmaster.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$DIR/$1/data" ] && echo "$pid"
}

# The postmaster's children (each in a process group of its own, so signalled by pid).
children_of() { pgrep -P "$1" || true; }

# The leader's name, from etcd's leader key (answers even while the leader is frozen), or nothing.
leader_name() {
  local key
  if [ "${DCS_API:-v2}" = v2 ]; then
    curl -fsS -m 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/v2/keys/service/malipo/leader" 2>/dev/null \
      | jq -r '.node.value // empty' 2>/dev/null || true
  else
    key=$(printf '/service/malipo/leader' | base64 -w0)
    curl -fsS -m 2 -X POST "http://127.0.0.1:$ETCD_CLIENT_PORT/v3/kv/range" -d "{\"key\":\"$key\"}" 2>/dev/null \
      | jq -r '.kvs[0].value // empty' | base64 -d 2>/dev/null || true
  fi
}

# Whether the node's PostgreSQL is a primary that commits a write within 3 s. The write is a
# transactional logical-decoding message: it writes WAL, so its commit waits (in synchronous mode)
# for a synchronous standby's acknowledgement. (`select txid_current()` would not do: a
# transaction that wrote no WAL before its commit record does not wait for a standby.)
writable() {
  [ "$(timeout 3 env PGCONNECT_TIMEOUT=2 \
      psql -h 127.0.0.1 -p "$(pg_port "$1")" -U postgres -d postgres -qAtc \
      "select pg_is_in_recovery(), pg_logical_emit_message(true, 'malipo-cluster', 'probe') is not null" \
      2>/dev/null)" = "f|t" ]
}

# Starts NODE's Patroni in the background as the postgres user, in a session of its own, with its
# working directory DIR/NODE; it writes its own pid to DIR/NODE/patroni.pid. setpriv and setsid
# exec (runuser would stay as Patroni's parent, and stop itself when Patroni is stopped).
start_patroni() {
  local nd="$DIR/$1"
  (cd "$nd" && exec setsid setpriv --reuid=postgres --regid=postgres --init-groups \
    env HOME=/var/lib/postgresql USER=postgres LOGNAME=postgres \
    sh -c 'echo $$ >patroni.pid; exec patroni patroni.yml' </dev/null >>"$nd/patroni.log" 2>&1) &
}
