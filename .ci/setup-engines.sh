#!/usr/bin/env bash
# Two more Docker engines on this machine, for the tests of several engines and replicas
# (test/sandbox/drivers/docker/engines.test.ts, test/integration/replicas.test.ts) and the gVisor abuse suite:
#   engine 1: unix:///run/rft-engines/1.sock
#   engine 2: unix:///run/rft-engines/2.sock and tcp://127.0.0.1:21376 with TLS client certificates
#             (/etc/rft-engines/tls/client: ca.pem, cert.pem, key.pem, as DOCKER_CERT_PATH expects)
# Each is its own dockerd: own config file, data-root, exec-root, pidfile and socket, with the same
# four network settings as the main daemon (no bridge, no iptables, no forwarding, no masquerading),
# and gVisor's runsc registered as a runtime (Debian's runsc package). The main daemon
# (/etc/docker/daemon.json, /var/run/docker.sock) is never touched. The sandbox image is copied in
# from the main engine when missing or different. Idempotent; run as root after setup-sandbox.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=rft-endpoints-sandbox:latest
TLS_PORT=21376
CONF=/etc/rft-engines
TLS=$CONF/tls

command -v runsc >/dev/null || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runsc >/dev/null
}
command -v openssl >/dev/null || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
}

# A CA, a server certificate for 127.0.0.1 and a client certificate (kept once made).
mkdir -p "$TLS/client"
if [ ! -s "$TLS/client/key.pem" ]; then
  (
    cd "$TLS"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj '/CN=rft-engines test CA' -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout server-key.pem -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -days 3650 -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -extfile server.ext -out server-cert.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj '/CN=rft-endpoints' -keyout client/key.pem -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -days 3650 -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -extfile client.ext -out client/cert.pem 2>/dev/null
    cp ca.pem client/ca.pem
    chmod 600 ca-key.pem server-key.pem client/key.pem
  )
fi

live() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && ps -p "$pid" -o stat= | grep -qv '^Z'
}

for n in 1 2; do
  sock=/run/rft-engines/$n.sock
  pidfile=/run/rft-engines/$n.pid
  hosts="\"unix://$sock\""
  tls=''
  if [ "$n" = 2 ]; then
    hosts="$hosts, \"tcp://127.0.0.1:$TLS_PORT\""
    tls=", \"tlsverify\": true, \"tlscacert\": \"$TLS/ca.pem\", \"tlscert\": \"$TLS/server-cert.pem\", \"tlskey\": \"$TLS/server-key.pem\""
  fi
  mkdir -p "$CONF" /run/rft-engines "/var/lib/rft-engines/$n"
  cat > "$CONF/$n.json.new" <<EOF
{
  "bridge": "none", "iptables": false, "ip-forward": false, "ip-masq": false,
  "data-root": "/var/lib/rft-engines/$n",
  "exec-root": "/run/rft-engines/exec-$n",
  "pidfile": "$pidfile",
  "hosts": [$hosts]$tls,
  "runtimes": { "runsc": { "path": "$(command -v runsc)", "runtimeArgs": ["--network=none", "--oci-seccomp"] } }
}
EOF
  if live "$pidfile" && cmp -s "$CONF/$n.json" "$CONF/$n.json.new" && docker -H "unix://$sock" version >/dev/null 2>&1; then
    rm "$CONF/$n.json.new"
  else
    if live "$pidfile"; then
      kill "$(cat "$pidfile")"
      for _ in $(seq 1 100); do live "$pidfile" || break; sleep 0.1; done
    fi
    rm -f "$pidfile" "$sock"
    mv "$CONF/$n.json.new" "$CONF/$n.json"
    nohup dockerd --config-file "$CONF/$n.json" >"/var/log/rft-engine-$n.log" 2>&1 &
    for _ in $(seq 1 150); do
      docker -H "unix://$sock" version >/dev/null 2>&1 && break
      sleep 0.2
    done
    docker -H "unix://$sock" version >/dev/null 2>&1 || { echo "setup-engines: engine $n did not start, see /var/log/rft-engine-$n.log" >&2; exit 1; }
  fi
  if docker -H "unix://$sock" network ls --format '{{.Driver}}' | grep -qx bridge; then
    echo "setup-engines: engine $n has a bridge network; it must run with $CONF/$n.json" >&2
    exit 1
  fi
  want=$(docker image inspect -f '{{.Id}}' "$IMAGE")
  have=$(docker -H "unix://$sock" image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    docker save "$IMAGE" | docker -H "unix://$sock" load >/dev/null
  fi
done

# gVisor must actually run a container here (it needs a kernel and a platform it supports).
if ! docker -H unix:///run/rft-engines/2.sock run --rm --runtime runsc --network none "$IMAGE" true >/dev/null 2>"/tmp/rft-runsc-check.log"; then
  echo "setup-engines: runsc cannot run a container on this machine, see /tmp/rft-runsc-check.log" >&2
  exit 1
fi
echo "setup-engines: engines unix:///run/rft-engines/1.sock, unix:///run/rft-engines/2.sock, tcp://127.0.0.1:$TLS_PORT (TLS, client certs in $TLS/client), runtime runsc"
