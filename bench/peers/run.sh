#!/usr/bin/env bash
# Races quickfdb against River (Postgres) and Asynq (Redis) on this machine.
#
# Installs postgresql and redis-server from Debian packages where missing,
# starts a private Postgres cluster and a private redis-server in a temporary
# directory on loopback ports (never the system's default services or
# ports), runs the benchmark bounded in time, stops what it started and
# prints the table. Arguments go to the benchmark, e.g. for a short run:
#
#   bench/peers/run.sh -jobs 2000 -reps 1 -idle-samples 40 -steady 3s
#
# Environment:
#   PEERS_PG_PORT      Postgres port (default 55432)
#   PEERS_REDIS_PORT   Redis port (default 56379)
#   PEERS_TIMEOUT      bound on the benchmark run (default 45m)
#   PEERS_JSON         where the JSON report goes (default bench/peers/peers.json)
#   FDB_CLUSTER_FILE   if set, also run quickfdb on that FoundationDB cluster
#                      (builds with -tags fdb; needs libfdb_c)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pg_port="${PEERS_PG_PORT:-55432}"
redis_port="${PEERS_REDIS_PORT:-56379}"
run_timeout="${PEERS_TIMEOUT:-45m}"
json_out="${PEERS_JSON:-$here/peers.json}"

log() { echo "run.sh: $*" >&2; }

pg_bindir() {
	local d
	d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
	[[ -n "$d" && -x "$d/initdb" ]] && echo "$d"
}

# Debian's packages; policy-rc.d in containers keeps their services from
# starting, and on a full system we never use those services anyway.
if ! pg_bindir >/dev/null || ! command -v redis-server >/dev/null; then
	log "installing postgresql and redis-server"
	sudo_=""
	[[ "$(id -u)" -ne 0 ]] && sudo_="sudo"
	$sudo_ apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive $sudo_ apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql redis-server >&2
fi
bindir="$(pg_bindir)" || { log "no PostgreSQL server binaries under /usr/lib/postgresql"; exit 1; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$pg_port" "$redis_port"; do
	if port_busy "$p"; then
		log "port $p on 127.0.0.1 is in use; pick another with PEERS_PG_PORT / PEERS_REDIS_PORT"
		exit 1
	fi
done

tmp="$(mktemp -d /tmp/quickfdb-peers.XXXXXX)"
pg_started=""
redis_pid=""
bench_pid=""

# Postgres refuses to run as root: as root, run it as the postgres user.
as_pg() {
	if [[ "$(id -u)" -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

cleanup() {
	local rc=$?
	if [[ -n "$bench_pid" ]]; then
		# timeout passes the TERM on; the benchmark prints what it has.
		kill -TERM "$bench_pid" 2>/dev/null || true
		wait "$bench_pid" 2>/dev/null || true
	fi
	if [[ -n "$redis_pid" ]]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	if [[ -n "$pg_started" ]]; then
		as_pg "$bindir/pg_ctl" -D "$tmp/pg" -m fast -w -t 60 stop >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Postgres: a fresh cluster with the defaults that matter here (fsync on,
# synchronous_commit on), trust auth, loopback only, its socket in $tmp.
mkdir -p "$tmp/pg" "$tmp/pgsock" "$tmp/redis"
[[ "$(id -u)" -eq 0 ]] && chown postgres: "$tmp" "$tmp/pg" "$tmp/pgsock"
chmod 0755 "$tmp"
log "initdb in $tmp/pg"
as_pg "$bindir/initdb" -D "$tmp/pg" -U postgres -A trust -E UTF8 --no-instructions >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log" >&2; exit 1; }
as_pg "$bindir/pg_ctl" -D "$tmp/pg" -l "$tmp/pg/server.log" -w -t 60 \
	-o "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$tmp/pgsock" start >/dev/null ||
	{ cat "$tmp/pg/server.log" >&2; exit 1; }
pg_started=1
as_pg "$bindir/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres peers
log "postgres on 127.0.0.1:$pg_port ($("$bindir/postgres" --version))"

# Redis: append-only file on, fsync every second (Redis's recommended
# durable setting), RDB snapshots off, loopback only, no unix socket.
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$tmp/redis" --daemonize no \
	--appendonly yes --appendfsync everysec --save "" --protected-mode yes \
	--logfile "$tmp/redis/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
	port_busy "$redis_port" && break
	sleep 0.1
done
port_busy "$redis_port" || { log "redis did not start"; cat "$tmp/redis/redis.log" >&2; exit 1; }
log "redis on 127.0.0.1:$redis_port ($(redis-server --version | cut -d' ' -f3))"

tags=()
fdb_args=()
if [[ -n "${FDB_CLUSTER_FILE:-}" ]]; then
	tags=(-tags fdb)
	fdb_args=(-fdb-cluster-file "$FDB_CLUSTER_FILE" -fdb-pids "$(pgrep -d, -x fdbserver || true)")
fi
log "building the benchmark"
(cd "$here" && timeout 10m go build "${tags[@]}" -o "$tmp/peers" .)

log "running (bounded by $run_timeout)"
# In the background so that a signal to this script runs its traps at once
# (bash defers traps while a foreground command runs).
timeout --signal=TERM --kill-after=30s "$run_timeout" "$tmp/peers" \
	-pg-dsn "postgres://postgres@127.0.0.1:$pg_port/peers?sslmode=disable" \
	-redis-addr "127.0.0.1:$redis_port" \
	-json "$json_out" "${fdb_args[@]}" "$@" &
bench_pid=$!
rc=0
wait "$bench_pid" || rc=$?
bench_pid=""
log "JSON report: $json_out"
exit "$rc"
