#!/usr/bin/env bash
# tests/integration/nginx_tls_split.sh — the handshake split through a TLS server latscope did not
# write: Debian's nginx as a TLS reverse proxy (proxy_buffering off) in front of `latscope sim`,
# started here with its own config, pid file, error log and self-signed P-256 certificate in a
# temp dir, one port with TLS 1.3 only and one with TLS 1.2 only. `latscope bench` sends 30
# requests over fresh connections to each with nginx's worker as the watched server
# (--server-pid); from the attribution JSONL, per request: the TLS handshake's network + client +
# server is its span, with 1 (1.3) or 2 (1.2) round trips, the server part is nginx's CPU (> 0)
# and network is a loopback's flights (well under the handshake). Needs root, kernel BTF, nginx,
# openssl and python3: without one, exit 77 with the reason.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
NGINX=${NGINX:-/usr/sbin/nginx}
N=${LATSCOPE_NGINX_N:-30} # requests per TLS version

skip() { echo "skip: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the probes need root"
[ -r /sys/kernel/btf/vmlinux ] || skip "no /sys/kernel/btf/vmlinux: the tp_btf probes need kernel BTF"
[ -x "$NGINX" ] || skip "no nginx at $NGINX (Debian package nginx)"
command -v openssl >/dev/null || skip "no openssl to make the certificate"
command -v python3 >/dev/null || skip "no python3 to read the attribution JSONL"
[ -x "$BIN" ] || skip "latscope is not built ($BIN)"

tmp=$(mktemp -d /tmp/latscope-nginx.XXXXXX) || exit 1
sim_pid='' nginx_pid=''
cleanup() {
	[ -n "$nginx_pid" ] && kill -TERM "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
	[ -n "$sim_pid" ] && kill -TERM "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
	[ -n "${T_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/error.log" ] && tail -5 "$tmp/error.log"; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
sim_port=$(free_port) p13=$(free_port) p12=$(free_port)

timeout 10 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>"$tmp/openssl.log" ||
	fail "openssl req: $(tail -1 "$tmp/openssl.log")"

"$BIN" sim --port "$sim_port" --step-ms 2 --quiet >"$tmp/sim.log" 2>&1 &
sim_pid=$!

mkdir -p "$tmp/temp"
tls_server() { # port protocol
	cat <<EOF
    server {
        listen 127.0.0.1:$1 ssl;
        ssl_certificate $tmp/cert.pem;
        ssl_certificate_key $tmp/key.pem;
        ssl_protocols $2;
        location / {
            proxy_pass http://127.0.0.1:$sim_port;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
EOF
}
cat >"$tmp/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $tmp/temp/body;
    proxy_temp_path $tmp/temp/proxy;
    fastcgi_temp_path $tmp/temp/fastcgi;
    uwsgi_temp_path $tmp/temp/uwsgi;
    scgi_temp_path $tmp/temp/scgi;
$(tls_server "$p13" TLSv1.3)
$(tls_server "$p12" TLSv1.2)
}
EOF
"$NGINX" -p "$tmp" -e "$tmp/error.log" -c "$tmp/nginx.conf" &
nginx_pid=$!

# nginx's worker (the master's one child) serves the connections; the sim answers behind it.
worker=''
for _ in $(seq 100); do
	kill -0 "$nginx_pid" 2>/dev/null || fail "nginx exited"
	worker=$(cat "/proc/$nginx_pid/task/$nginx_pid/children" 2>/dev/null | awk '{print $1}')
	if [ -n "$worker" ] && timeout 5 curl -skf -o /dev/null "https://127.0.0.1:$p13/v1/models" &&
		timeout 5 curl -skf -o /dev/null "https://127.0.0.1:$p12/v1/models"; then
		break
	fi
	worker=''
	sleep 0.1
done
[ -n "$worker" ] || fail "nginx did not proxy to the simulator within 10 s"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'): master $nginx_pid, worker $worker; sim $sim_pid"

status=0
for v in 1.3 1.2; do
	port=$p13 rounds=1
	[ "$v" = 1.2 ] && port=$p12 rounds=2
	rec=$tmp/run$v.jsonl
	timeout -k 5 120 "$BIN" bench --base-url "https://127.0.0.1:$port" --insecure --model latscope-sim \
		--random-input-len 16 --random-output-len 8 --ignore-eos --num-prompts $N --request-rate 20 \
		--connection per-request --disable-tqdm --probes on --server-pid "$worker" --record "$rec" \
		--ready-check-timeout-sec 10 >"$tmp/bench$v.out" 2>"$tmp/bench$v.err" ||
		fail "bench through nginx (TLS $v) exited $?: $(tail -3 "$tmp/bench$v.err")"
	grep -A1 '^connect+TLS' "$tmp/bench$v.out" | sed "s/^/TLS $v: /"
	python3 - "${rec%.jsonl}.attribution.jsonl" "$rounds" "$N" "$v" <<'EOF' || status=1
import json, sys
path, rounds, n_want, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lines = [json.loads(l) for l in open(path)][1:]
hs = [o for o in lines if 'tls' in o and 'warmup' not in o['flags']]
bad = []
for o in hs:
    t = o['tls']
    net, cli, srv = (t.get(k, 0) for k in ('network_ns', 'client_ns', 'server_ns'))
    why = []
    if o['flags']:
        why.append('flags %s' % o['flags'])
    if net + cli + srv != t['total_ns']:
        why.append('network %d + client %d + server %d != %d' % (net, cli, srv, t['total_ns']))
    if len(t.get('rounds', [])) != rounds:
        why.append('%d round trips' % len(t.get('rounds', [])))
    if srv <= 0 or cli <= 0:
        why.append('server %d client %d' % (srv, cli))
    if net > t['total_ns'] / 4:
        why.append('network %d of %d on loopback' % (net, t['total_ns']))
    if why:
        bad.append('request %s: %s' % (o['id'], '; '.join(why)))
ok = len(hs) >= n_want and len(bad) <= len(hs) // 10
print('TLS %s: %d handshakes through nginx, %d off%s' % (v, len(hs), len(bad), ''.join('\n  ' + b for b in bad[:5])))
sys.exit(0 if ok else 1)
EOF
done
[ $status = 0 ] || fail "the split through nginx is off (above)"
echo "ok: the handshake split through nginx $("$NGINX" -v 2>&1 | sed 's/.*\///') with its worker watched"
