#!/usr/bin/env bash
# Sourced by Benchmarks/run and Benchmarks/profile: installs nginx-light (Debian) if missing and
# starts it on a free loopback port with nginx.conf.template (one worker, one small JSON
# document) in the folder "$work"; sets nginx_pid and exports AUTHREQ_BENCH_NGINX. The caller
# stops it (kill "$nginx_pid").
start_nginx() {
    if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
        echo "Installing nginx-light (Debian)" >&2
        if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null
        else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; fi
    fi
    nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"

    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    sed -e "s|@DIR@|$work|g" -e "s|@PORT@|$port|g" nginx.conf.template > "$work/nginx.conf"
    "$nginx_bin" -c "$work/nginx.conf" -p "$work" &
    nginx_pid=$!
    trap 'kill $nginx_pid 2>/dev/null || true; wait $nginx_pid 2>/dev/null || true' EXIT
    for _ in $(seq 1 50); do
        if python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "http://127.0.0.1:$port/me.json" 2>/dev/null; then break; fi
        sleep 0.1
    done
    export AUTHREQ_BENCH_NGINX="http://127.0.0.1:$port"
}
