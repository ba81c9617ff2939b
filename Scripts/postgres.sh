# Starts a PostgreSQL server for the tests, from Debian's packages, on a free loopback port with
# its data folder inside the build folder (.build/postgres), and stops it when the shell exits.
# Source this file (after authorization-server.sh), then call: start_postgres
# It starts three servers and exports their postgres:// URLs: AUTHREQ_TEST_POSTGRES, which every
# test shares, AUTHREQ_TEST_POSTGRES_FAULTS, which the fault tests stop, start and cut
# connections of (`bash "$AUTHREQ_TEST_POSTGRES_CONTROL" faults stop|start` brings it down and back,
# `pause|resume` freezes and thaws it on the same port) without disturbing the others, and
# AUTHREQ_TEST_POSTGRES_FLEET, with PostgreSQL's default max_connections (100), for the fleet
# tests. In front of the three it starts PgBouncer in transaction pooling mode with a server pool
# of 20 per database, and exports AUTHREQ_TEST_PGBOUNCER, AUTHREQ_TEST_PGBOUNCER_FAULTS and
# AUTHREQ_TEST_PGBOUNCER_FLEET: the same databases through the pooler.
#
# On a machine without them it installs Debian's `postgresql` and `pgbouncer` packages (as root),
# and as root it runs both as the `postgres` user that the first creates (both refuse root).

AUTHREQ_ROOT="${AUTHREQ_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
AUTHREQ_PG_BASE="$AUTHREQ_ROOT/.build/postgres"

postgres_bin() {
    local bin
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$bin" ] && [ -x "$bin/initdb" ] && echo "$bin"
}

install_postgres() {
    if ! command -v pgbouncer >/dev/null && [ ! -x /usr/sbin/pgbouncer ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing PgBouncer from Debian's packages (pgbouncer)" >&2
            # A new machine's package lists may be empty: update them before any install.
            apt-get update -qq >&2 || return 1
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null || return 1
        else
            echo "error: the tests need PgBouncer: apt-get install pgbouncer" >&2
            return 1
        fi
    fi
    if ! postgres_bin >/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing PostgreSQL from Debian's packages (postgresql)" >&2
            apt-get update -qq >&2 || return 1
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || return 1
        else
            echo "error: the tests need a PostgreSQL server: apt-get install postgresql" >&2
            return 1
        fi
    fi
    AUTHREQ_PG_BIN="$(postgres_bin)"
}

# Runs a PostgreSQL program as the user that owns the data folder.
as_postgres_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The real folder of cluster NAME: .build/postgres/NAME, or the private temporary folder it links
# to when the checkout's folders are closed to the postgres user (a checkout under /root).
postgres_dir() {
    readlink -f "$AUTHREQ_PG_BASE/$1"
}

# postgres_ctl NAME start|stop
postgres_ctl() {
    local bin port dir
    dir="$(postgres_dir "$1")"
    bin="$(postgres_bin)"
    port="$(cat "$dir/port")"
    case "$2" in
        start)
            as_postgres_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
                -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=$(cat "$dir/max_connections") \
                    -c shared_preload_libraries=pg_stat_statements" \
                start >/dev/null
            ;;
        stop)
            as_postgres_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
            ;;
        pause | resume)
            # A database that is there but answers nothing: the server and its backends stopped
            # (SIGSTOP), their sockets left open.
            local signal=STOP pid
            [ "$2" = resume ] && signal=CONT
            pid="$(head -n 1 "$dir/data/postmaster.pid")"
            as_postgres_owner kill -"$signal" "$pid" $(ps -o pid= --ppid "$pid") 2>/dev/null || true
            ;;
        *)
            echo "usage: postgres.sh NAME start|stop|pause|resume" >&2
            return 2
            ;;
    esac
}

stop_postgres() {
    local dir
    for dir in "$AUTHREQ_PG_BASE"/*; do
        [ -e "$dir" ] || continue
        dir="$(readlink -f "$dir")" || continue
        if [ -f "$dir/data/postmaster.pid" ]; then
            as_postgres_owner "$(postgres_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
    done
}

# postgres_owned_dir NAME: the folder .build/postgres/NAME, made and owned by the postgres user
# when run as root; prints its real path. When that user cannot reach the checkout (e.g. under
# /root), the folder is a private temporary one, linked from the build folder and removed with it.
postgres_owned_dir() {
    local dir="$AUTHREQ_PG_BASE/$1"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$dir"
        if ! runuser -u postgres -- test -w "$dir" 2>/dev/null; then
            rmdir "$dir"
            dir="$(mktemp -d -t "authreq-$1-XXXXXX")"
            chown postgres "$dir"
            ln -s "$dir" "$AUTHREQ_PG_BASE/$1"
        fi
    fi
    echo "$dir"
}

# create_postgres NAME [MAX_CONNECTIONS]: a new cluster in .build/postgres/NAME with a database
# authreq_test, allowing MAX_CONNECTIONS (300 unless given); prints its URL.
create_postgres() {
    local dir port
    dir="$(postgres_owned_dir "$1")" || return 1
    if ! as_postgres_owner "$AUTHREQ_PG_BIN/initdb" -D "$dir/data" -U authreq -A trust -E UTF8 \
        --no-sync >"$dir/initdb.log" 2>&1; then
        echo "error: initdb failed; its log:" >&2
        cat "$dir/initdb.log" >&2
        return 1
    fi
    # Members of the role authreq_password_login sign in with a password (SCRAM), so that tests can
    # present a wrong one; every other role is trusted on loopback.
    as_postgres_owner sh -c "{ echo 'host all +authreq_password_login 127.0.0.1/32 scram-sha-256'; \
        cat '$dir/data/pg_hba.conf'; } >'$dir/data/pg_hba.conf.new' && mv '$dir/data/pg_hba.conf.new' '$dir/data/pg_hba.conf'" \
        || return 1
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
        >"$dir/port"
    echo "${2:-300}" >"$dir/max_connections"
    if ! postgres_ctl "$1" start; then
        echo "error: PostgreSQL did not start; its log:" >&2
        cat "$dir/server.log" >&2
        return 1
    fi
    port="$(cat "$dir/port")"
    "$AUTHREQ_PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U authreq authreq_test || return 1
    "$AUTHREQ_PG_BIN/psql" -q -h 127.0.0.1 -p "$port" -U authreq -d authreq_test \
        -c "CREATE EXTENSION pg_stat_statements" -c "CREATE ROLE authreq_password_login NOLOGIN" \
        >/dev/null || return 1
    echo "postgres://authreq@127.0.0.1:$port/authreq_test"
}

start_postgres() {
    install_postgres || return 1
    stop_pgbouncer
    stop_postgres
    local link
    for link in "$AUTHREQ_PG_BASE"/*; do
        if [ -L "$link" ]; then rm -rf "$(readlink -f "$link")"; fi
    done
    rm -rf "$AUTHREQ_PG_BASE"
    mkdir -p "$AUTHREQ_PG_BASE"
    authreq_on_exit stop_postgres
    AUTHREQ_TEST_POSTGRES="$(create_postgres shared)" || return 1
    AUTHREQ_TEST_POSTGRES_FAULTS="$(create_postgres faults)" || return 1
    AUTHREQ_TEST_POSTGRES_FLEET="$(create_postgres fleet 100)" || return 1
    export AUTHREQ_TEST_POSTGRES AUTHREQ_TEST_POSTGRES_FAULTS AUTHREQ_TEST_POSTGRES_FLEET
    start_pgbouncer || return 1
    export AUTHREQ_TEST_POSTGRES_CONTROL="$AUTHREQ_ROOT/Scripts/postgres.sh"
    echo "Test PostgreSQL ($("$AUTHREQ_PG_BIN/postgres" --version)): $AUTHREQ_TEST_POSTGRES and $AUTHREQ_TEST_POSTGRES_FAULTS" >&2
}

# start_pgbouncer: PgBouncer on a free loopback port in front of the three clusters, pooling by
# transaction with 20 server connections per database; exports the URLs through it.
start_pgbouncer() {
    local dir port name url
    dir="$(postgres_owned_dir pgbouncer)" || return 1
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    {
        echo "[databases]"
        for name in shared faults fleet; do
            echo "$name = host=127.0.0.1 port=$(cat "$(postgres_dir "$name")/port") dbname=authreq_test"
        done
        echo "[pgbouncer]"
        echo "listen_addr = 127.0.0.1"
        echo "listen_port = $port"
        echo "unix_socket_dir ="
        echo "auth_type = trust"
        echo "auth_file = $dir/users.txt"
        echo "pool_mode = transaction"
        echo "default_pool_size = 20"
        echo "max_client_conn = 2000"
        # 200 replicas connect at once: the default backlog of 128 drops the rest's SYNs, and
        # TCP retries them only after 1, 3, 7 s.
        echo "listen_backlog = 4096"
        # A database that comes back is used again within a second (the default waits 15 s).
        echo "server_login_retry = 1"
        echo "ignore_startup_parameters = extra_float_digits,options"
        echo "logfile = $dir/pgbouncer.log"
        echo "pidfile = $dir/pgbouncer.pid"
    } >"$dir/pgbouncer.ini"
    echo '"authreq" ""' >"$dir/users.txt"
    [ "$(id -u)" = 0 ] && chown postgres "$dir/pgbouncer.ini" "$dir/users.txt"
    # Room for 2000 clients: the default limit of 1024 descriptors is not (set in the shell that
    # starts it, since runuser starts a new session with the default limits).
    if ! as_postgres_owner bash -c 'ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec pgbouncer -d -q "$1"' \
        pgbouncer "$dir/pgbouncer.ini"; then
        echo "error: PgBouncer did not start; its log:" >&2
        cat "$dir/pgbouncer.log" >&2
        return 1
    fi
    authreq_on_exit stop_pgbouncer
    for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
    export AUTHREQ_TEST_PGBOUNCER="postgres://authreq@127.0.0.1:$port/shared"
    export AUTHREQ_TEST_PGBOUNCER_FAULTS="postgres://authreq@127.0.0.1:$port/faults"
    export AUTHREQ_TEST_PGBOUNCER_FLEET="postgres://authreq@127.0.0.1:$port/fleet"
    echo "Test PgBouncer ($(pgbouncer --version | head -n 1), transaction pooling, 20 per database): 127.0.0.1:$port" >&2
}

stop_pgbouncer() {
    local pidfile="$AUTHREQ_PG_BASE/pgbouncer/pgbouncer.pid"
    [ -f "$pidfile" ] && as_postgres_owner kill "$(cat "$pidfile")" 2>/dev/null || true
}

# Run as a program: start or stop the server that start_postgres set up.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    # The server outlives this script: it must not inherit the caller's descriptors (Foundation's
    # Process learns that its child ended when the last copy of one of them closes).
    for descriptor in /proc/$$/fd/*; do
        number="${descriptor##*/}"
        if [ "$number" -gt 2 ] 2>/dev/null; then eval "exec $number>&-" 2>/dev/null || true; fi
    done
    postgres_ctl "$1" "$2"
fi
