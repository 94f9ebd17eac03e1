#!/usr/bin/env bash
# Brings up, on loopback only, a throw-away high-availability PostgreSQL for Malipo: one etcd and
# three Patroni-managed PostgreSQL 15 nodes in synchronous mode, all with their data under DIR.
#
#   bash scripts/cluster/up.sh DIR      # DIR: a new or empty directory (e.g. $(mktemp -d))
#
# - Installs Debian's etcd-server and patroni (and jq, bc, curl, which these scripts use) with
#   apt-get when they are missing.
# - Ports (loopback only; the machine's own PostgreSQL at 5432 is never touched):
#   etcd client 12379 / peer 12380; node1..node3: PostgreSQL 15432..15434, Patroni REST 18008..18010.
# - Patroni: synchronous_mode and synchronous_mode_strict, synchronous_commit=on; trust
#   authentication on loopback for the user postgres; a database `malipo` is created.
# - Waits, with a deadline (CLUSTER_UP_TIMEOUT, default 90 s), until a leader and a synchronous
#   standby exist and the leader commits a write (which waits for the standby), then prints the multi-host URL for Malipo.
# - Every process started is recorded: DIR/etcd.pid, DIR/nodeN/patroni.pid (PostgreSQL's own pid
#   is in DIR/nodeN/data/postmaster.pid). `scripts/cluster/down.sh DIR` stops them all and removes
#   DIR; `scripts/cluster/ctl.sh DIR ...` finds the leader, kills or freezes it.
# - Files it writes: DIR/cluster.env (ports, read by ctl.sh and down.sh), DIR/patronictl.yml
#   (for `patronictl -c DIR/patronictl.yml list|switchover|failover`), DIR/nodeN/patroni.yml,
#   logs DIR/etcd.log and DIR/nodeN/patroni.log (PostgreSQL's log is in DIR/nodeN/data/log/).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "run as root (PostgreSQL and Patroni are run as the postgres user)" >&2; exit 2; }

PG_BIN=/usr/lib/postgresql/15/bin
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380
PG_PORTS=(15432 15433 15434)
REST_PORTS=(18008 18009 18010)
SCOPE=malipo
TIMEOUT="${CLUSTER_UP_TIMEOUT:-90}"
# Patroni talks to etcd through its v2 API (etcd started with --enable-v2) by default: Debian 12's
# Patroni 3.0.2 renews the leader key through the v3 API without comparing its owner, so a leader
# that was frozen past its TTL takes the key back from the node promoted meanwhile on waking,
# and that node's commits are rewound away (patroni/patroni#2689, fixed in later releases).
# CLUSTER_DCS_API=v3 uses the v3 API anyway (to see that happen).
DCS_API="${CLUSTER_DCS_API:-v2}"
case "$DCS_API" in
  v2) DCS_SECTION=etcd ;;
  v3) DCS_SECTION=etcd3 ;;
  *) echo "CLUSTER_DCS_API must be v2 or v3" >&2; exit 2 ;;
esac
# Failure detection: the leader key lives TTL seconds after the leader's last renewal. Short here
# (a local try and a test harness); see docs/operations.md for production values.
TTL="${CLUSTER_TTL:-10}"
LOOP_WAIT="${CLUSTER_LOOP_WAIT:-1}"
RETRY_TIMEOUT="${CLUSTER_RETRY_TIMEOUT:-4}"

started=$(date +%s.%N)
elapsed() { printf '%.1f' "$(echo "$(date +%s.%N) - $started" | bc)"; }

if ! command -v etcd >/dev/null || ! command -v patroni >/dev/null || ! command -v patronictl >/dev/null \
  || ! command -v jq >/dev/null || ! command -v bc >/dev/null || ! command -v curl >/dev/null; then
  echo "installing Debian's etcd-server and patroni"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server patroni jq bc curl) \
    || { echo "cannot install etcd-server and patroni" >&2; exit 1; }
fi
[ -x "$PG_BIN/postgres" ] || { echo "PostgreSQL 15 is not installed at $PG_BIN" >&2; exit 1; }

mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
if [ -n "$(ls -A "$DIR")" ]; then
  echo "$DIR is not empty: give up.sh a new directory (down.sh DIR removes an old cluster)" >&2
  exit 2
fi
# A Unix socket path is limited to 107 bytes: DIR/nodeN/.s.PGSQL.15432 must fit.
[ "${#DIR}" -le 80 ] || { echo "$DIR is too long a path for PostgreSQL's sockets; use a shorter one" >&2; exit 2; }

for port in "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "${PG_PORTS[@]}" "${REST_PORTS[@]}"; do
  if ss -Hltn "sport = :$port" | grep -q .; then
    echo "port $port is already in use (another cluster? down.sh its DIR first)" >&2
    exit 1
  fi
done

# down.sh removes only directories carrying this marker.
echo "created by scripts/cluster/up.sh at $(date -u +%FT%TZ)" >"$DIR/.malipo-cluster"
cat >"$DIR/cluster.env" <<ENV
ETCD_CLIENT_PORT=$ETCD_CLIENT_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
DCS_API=$DCS_API
NODES="node1 node2 node3"
PG_PORT_node1=${PG_PORTS[0]}
PG_PORT_node2=${PG_PORTS[1]}
PG_PORT_node3=${PG_PORTS[2]}
REST_PORT_node1=${REST_PORTS[0]}
REST_PORT_node2=${REST_PORTS[1]}
REST_PORT_node3=${REST_PORTS[2]}
ENV

fail() {
  echo "up.sh: $*" >&2
  echo "logs: $DIR/etcd.log, $DIR/node*/patroni.log, $DIR/node*/data/log/; stop it with: bash $here/down.sh $DIR" >&2
  exit 1
}

# Every process started here runs with its working directory inside DIR: that is how ctl.sh and
# down.sh recognise the cluster's processes (PostgreSQL's own run in their data directories).
cd "$DIR"

# etcd, a single member (a real deployment runs three, on three machines).
setsid etcd --name etcd1 --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "etcd1=http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster-state new --initial-cluster-token "malipo-$$" \
  --enable-v2=true --logger zap --log-level warn \
  </dev/null >"$DIR/etcd.log" 2>&1 &
echo $! >"$DIR/etcd.pid"

deadline=$(( $(date +%s) + TIMEOUT ))
until curl -fsS -m 1 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" 2>/dev/null | grep -q '"health":"true"'; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "etcd did not become healthy within ${TIMEOUT}s"
  kill -0 "$(cat "$DIR/etcd.pid")" 2>/dev/null || fail "etcd exited"
  sleep 0.2
done
echo "etcd healthy after $(elapsed)s"

cat >"$DIR/patronictl.yml" <<YML
scope: $SCOPE
$DCS_SECTION:
  hosts: 127.0.0.1:$ETCD_CLIENT_PORT
YML

for i in 0 1 2; do
  node="node$((i + 1))"
  nd="$DIR/$node"
  mkdir -p "$nd"
  cat >"$nd/patroni.yml" <<YML
scope: $SCOPE
name: $node
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${REST_PORTS[$i]}
  connect_address: 127.0.0.1:${REST_PORTS[$i]}
$DCS_SECTION:
  hosts: 127.0.0.1:$ETCD_CLIENT_PORT
bootstrap:
  dcs:
    ttl: $TTL
    loop_wait: $LOOP_WAIT
    retry_timeout: $RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    # A commit is acknowledged only once a synchronous standby has it; strict: with no standby
    # left, writes wait rather than go on unprotected (docs/operations.md).
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        synchronous_commit: "on"
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
        password_encryption: scram-sha-256
        # A standby whose upstream died retries after this (default 5 s): it must reach the new
        # primary, and become its synchronous standby, soon after a failover.
        wal_retrieve_retry_interval: 1s
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - no-sync
postgresql:
  listen: 127.0.0.1:${PG_PORTS[$i]}
  connect_address: 127.0.0.1:${PG_PORTS[$i]}
  data_dir: $nd/data
  bin_dir: $PG_BIN
  pgpass: $nd/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: $nd
    lc_messages: C
    logging_collector: "on"
    log_directory: log
  pg_hba:
    - local all postgres trust
    - host all postgres 127.0.0.1/32 trust
    - host replication postgres 127.0.0.1/32 trust
YML
done
chown -R postgres: "$DIR"
chmod 700 "$DIR"
chown root: "$DIR/etcd.pid" "$DIR/etcd.log"
chown -R root: "$DIR/etcd"

for node in node1 node2 node3; do
  nd="$DIR/$node"
  start_patroni "$node"
done

# A leader, a synchronous standby (both running), and the leader takes a write.
cluster_json() { curl -fsS -m 1 "http://127.0.0.1:${REST_PORTS[$1]}/cluster" 2>/dev/null; }
leader_port=""
until [ -n "$leader_port" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "no leader with a synchronous standby within ${TIMEOUT}s"
  for i in 0 1 2; do
    json=$(cluster_json "$i") || continue
    leader_port=$(jq -r '
      if ([.members[] | select(.role == "leader" and .state == "running")] | length) == 1
         and ([.members[] | select(.role == "sync_standby" and (.state == "running" or .state == "streaming"))] | length) >= 1
      then (.members[] | select(.role == "leader") | .port) else empty end' <<<"$json")
    [ -n "$leader_port" ] && break
  done
  [ -n "$leader_port" ] || sleep 0.3
done
echo "leader and synchronous standby after $(elapsed)s"

cluster_load "$DIR"
leader=$(leader_name)
until [ -n "$leader" ] && writable "$leader"; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "the leader ${leader:-?} takes no write within ${TIMEOUT}s"
  sleep 0.3
  leader=$(leader_name)
done
leader_port=$(pg_port "$leader")
leader_url="postgres://postgres@127.0.0.1:$leader_port/postgres?connect_timeout=2"
if [ "$(psql "$leader_url" -qAtc "select count(*) from pg_database where datname = 'malipo'")" = 0 ]; then
  psql "$leader_url" -qAtc 'create database malipo' >/dev/null
fi
# Every node has the database before the URL is handed out: libpq tries the next host of a
# multi-host URL when one refuses connections, but not when one answers `database "malipo" does
# not exist` (a replica that has not replayed the creation yet).
for port in "${PG_PORTS[@]}"; do
  until psql "postgres://postgres@127.0.0.1:$port/malipo?connect_timeout=2" -qAtc 'select 1' >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "the database malipo is not on port $port within ${TIMEOUT}s"
    sleep 0.2
  done
done

echo "cluster up after $(elapsed)s (leader on port $leader_port); patronictl -c $DIR/patronictl.yml list"
echo "postgres://postgres@127.0.0.1:${PG_PORTS[0]},127.0.0.1:${PG_PORTS[1]},127.0.0.1:${PG_PORTS[2]}/malipo?target_session_attrs=read-write&connect_timeout=2"
