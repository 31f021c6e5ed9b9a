#!/usr/bin/env bash
# Writes haproxy-2.6-events.log: what a real HAProxy (Debian's haproxy
# package, 2.6.12 when the file was made) sends to syslog besides its request
# lines. Run it from anywhere with haproxy, python3, curl and openssl
# installed: bash ingest/testdata/conformance/haproxy-2.6-events.sh > out.log
# Everything listens on 127.0.0.1 only and stops by itself.
set -euo pipefail
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 -subj /CN=localhost 2>/dev/null
cat cert.pem key.pem > site.pem
mkdir www && echo ok > www/index.html
python3 -m http.server 18190 --bind 127.0.0.1 --directory www >/dev/null 2>&1 &
# The syslog sink: every datagram, one line each, until 3 s of silence.
cat > sink.py <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 18191))
s.settimeout(3)
with open("sink.log", "w") as out:
    try:
        while True:
            d, _ = s.recvfrom(65536)
            out.write(d.decode().rstrip("\n\x00") + "\n")
            out.flush()
    except socket.timeout:
        pass
PY
python3 sink.py &
sink=$!
cat > haproxy.cfg <<'CFG'
global
    log 127.0.0.1:18191 len 8192 local0

defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 5s
    timeout server 1s

frontend fe
    bind 127.0.0.1:18192
    bind 127.0.0.1:18193 ssl crt site.pem
    use_backend gone if { path_beg /gone }
    default_backend app

backend app
    server www 127.0.0.1:18190

backend gone
    option httpchk GET /
    server old 127.0.0.1:18194 check inter 200ms fall 1
CFG
sleep 0.5
haproxy -db -f haproxy.cfg >/dev/null 2>&1 &
hap=$!
sleep 1
curl -s -o /dev/null http://127.0.0.1:18192/index.html
curl -s -o /dev/null http://127.0.0.1:18193/plain-http-to-the-tls-port || true
curl -sk -o /dev/null https://127.0.0.1:18193/index.html
openssl s_client -connect 127.0.0.1:18193 -tls1_3 -ciphersuites TLS_AES_128_CCM_8_SHA256 </dev/null >/dev/null 2>&1 || true
curl -s -o /dev/null http://127.0.0.1:18192/gone/x || true
kill -USR1 $hap # soft stop: HAProxy logs each proxy it stops
wait $hap || true
wait $sink
cat sink.log
