#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for ntprof's shared history store
# (docs/cluster.md): tests and users trying `--db postgresql://`.
#
# Usage: scripts/local-postgres.sh up [DIR]     start one; the URL is the LAST line
#        scripts/local-postgres.sh down [DIR]   stop it and remove DIR
#        scripts/local-postgres.sh stop|start|restart [DIR]
#                                             stop or start the server, keeping its data and port
#
# `up` makes DIR (default: a new mktemp -d folder), runs initdb there and
# starts the server listening on a Unix socket in DIR and on 127.0.0.1 at a
# free port, nowhere else. The socket trusts any local user; TCP asks for a
# password generated here. The database `ntprof` belongs to the superuser
# `ntprof`. As root, the server runs as the unprivileged user `postgres`
# (else `nobody`) owning DIR, since initdb and postgres refuse root.
# Without DIR, `down` and `restart` use the folder the last `up` of this
# user printed (recorded in ${TMPDIR:-/tmp}/ntprof-local-postgres.$UID).
set -euo pipefail

state="${TMPDIR:-/tmp}/ntprof-local-postgres.$(id -u)"

# A cluster `up` is making, removed again should it fail half-way.
cleanup_dir=""
die() {
    echo "local-postgres.sh: $*" >&2
    if [ -n "$cleanup_dir" ]; then
        stop_server "$cleanup_dir" >/dev/null 2>&1 || true
        rm -rf "$cleanup_dir"
    fi
    exit 1
}

bindir() {
    if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then
        echo "$PG_BINDIR"
        return
    fi
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return
        fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return
    fi
    die "no PostgreSQL server binaries (initdb, pg_ctl): apt install postgresql, or set PG_BINDIR"
}

# Run a command as the server's user: ourselves, or an unprivileged one as root.
owner=""
as_owner() {
    if [ -n "$owner" ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

pick_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        if getent passwd postgres >/dev/null; then
            owner=postgres
        else
            owner=nobody
        fi
        command -v runuser >/dev/null || die "running as root needs runuser (util-linux) to start the server as $owner"
    fi
}

# A TCP port on 127.0.0.1 nobody listens on (a race with other starters is
# caught by the server's start failing, and retried with another port).
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    die "no free TCP port found on 127.0.0.1"
}

start_server() { # dir port
    local dir="$1" port="$2" bin
    bin="$(bindir)"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=200 -c shared_buffers=32MB" \
        start >/dev/null
}

stop_server() { # dir
    local dir="$1" bin
    bin="$(bindir)"
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
}

resolve_dir() { # [DIR]
    local dir="${1:-}"
    if [ -z "$dir" ]; then
        [ -f "$state" ] || die "no DIR given and no cluster recorded in $state"
        dir="$(cat "$state")"
    fi
    [ -d "$dir/data" ] || die "$dir holds no cluster made by this script"
    echo "$dir"
}

owner_of() { # dir: the user the cluster runs as, when we are root
    if [ "$(id -u)" -eq 0 ]; then
        owner="$(stat -c %U "$1/data")"
        [ "$owner" = root ] && owner=""
    fi
    return 0
}

cmd_up() {
    local bin dir port pass
    bin="$(bindir)"
    pick_owner
    if [ -n "${1:-}" ]; then
        dir="$1"
        mkdir -p "$dir"
        [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
    else
        dir="$(mktemp -d "${TMPDIR:-/tmp}/ntprof-pg.XXXXXX")"
    fi
    dir="$(cd "$dir" && pwd)"
    cleanup_dir="$dir"
    chmod 755 "$dir"
    pass="$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)"
    printf '%s\n' "$pass" >"$dir/password"
    chmod 600 "$dir/password"
    if [ -n "$owner" ]; then
        chown -R "$owner" "$dir"
        as_owner test -w "$dir" || die "$dir is not reachable by $owner, who runs the server (a parent folder is private); give no DIR or one under /tmp"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U ntprof --pwfile="$dir/password" -A trust \
        --auth-host=scram-sha-256 --auth-local=trust --no-sync -E UTF8 --locale=C \
        >"$dir/initdb.log" 2>&1 || die "initdb failed (see $dir/initdb.log)"
    # Only the socket and 127.0.0.1: nothing from other hosts, whatever initdb wrote.
    cat >"$dir/data/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 scram-sha-256
EOF
    [ -z "$owner" ] || chown "$owner" "$dir/data/pg_hba.conf"
    local ok=0
    for _ in 1 2 3 4 5; do
        port="$(free_port)"
        if start_server "$dir" "$port" 2>>"$dir/start.log"; then
            ok=1
            break
        fi
    done
    [ "$ok" = 1 ] || die "the server did not start (see $dir/server.log)"
    echo "$port" >"$dir/port"
    as_owner "$bin/createdb" -h "$dir" -p "$port" -U ntprof ntprof ||
        die "createdb failed (see $dir/server.log)"
    echo "$dir" >"$state"
    cleanup_dir=""
    echo "dir: $dir"
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') in $dir (server log: $dir/server.log)"
    echo "socket URL: postgresql:///ntprof?host=$dir&port=$port&user=ntprof"
    echo "stop it with: $0 down $dir"
    echo "postgresql://ntprof:$pass@127.0.0.1:$port/ntprof"
}

cmd_down() {
    local dir
    dir="$(resolve_dir "${1:-}")"
    owner_of "$dir"
    stop_server "$dir" || echo "local-postgres.sh: the server in $dir did not stop cleanly" >&2
    rm -rf "$dir"
    if [ -f "$state" ] && [ "$(cat "$state")" = "$dir" ]; then
        rm -f "$state"
    fi
    echo "stopped and removed $dir"
}

cmd_restart() {
    local dir
    dir="$(resolve_dir "${1:-}")"
    owner_of "$dir"
    stop_server "$dir"
    start_server "$dir" "$(cat "$dir/port")" || die "the server did not start again (see $dir/server.log)"
    echo "restarted $dir"
}

cmd_stop() {
    local dir
    dir="$(resolve_dir "${1:-}")"
    owner_of "$dir"
    stop_server "$dir"
    echo "stopped $dir"
}

cmd_start() {
    local dir
    dir="$(resolve_dir "${1:-}")"
    owner_of "$dir"
    start_server "$dir" "$(cat "$dir/port")" || die "the server did not start (see $dir/server.log)"
    echo "started $dir"
}

case "${1:-}" in
    up) cmd_up "${2:-}" ;;
    down) cmd_down "${2:-}" ;;
    stop) cmd_stop "${2:-}" ;;
    start) cmd_start "${2:-}" ;;
    restart) cmd_restart "${2:-}" ;;
    *)
        echo "usage: $0 up [DIR] | down [DIR] | stop|start|restart [DIR]" >&2
        exit 2
        ;;
esac
