#!/bin/bash
# Measures cronlock run's CPU and memory while a command job writes 5 s of
# output (at 100 MB/s, then as fast as it can), unfollowed and followed by
# `cronlock logs -f`, with the embedded NATS server.
#   bash bench/liveoutput/measure.sh BIN [PORT]
# BIN is a cronlock binary (go build -o /tmp/cronlock ./cmd/cronlock);
# alternate it with an older binary to compare.
set -euo pipefail
B=$(realpath "$1"); PORT=${2:-14222}; HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cat > "$W/c.yaml" <<YAML
nats:
  url: ""
  embedded: {listen: "127.0.0.1:$PORT", store_dir: $W/nats}
http: {listen: ""}
shutdown_grace: 1s
jobs:
  - name: rate100
    schedule: "@yearly"
    shell: python3 $HERE/writer.py 100 5 $W/results
  - name: max
    schedule: "@yearly"
    shell: python3 $HERE/writer.py 0 5 $W/results
YAML
cd "$W"
"$B" run -c c.yaml > daemon.log 2>&1 & D=$!
until grep -qs "scheduler running" daemon.log; do sleep 0.1; done
cpu() { awk '{print $14+$15}' /proc/$D/stat; }
for job in rate100 max; do
  for mode in alone followed; do
    c0=$(cpu); t0=$(date +%s.%N)
    if [ $mode = followed ] && "$B" help logs >/dev/null 2>&1; then
      "$B" trigger --no-wait -c c.yaml $job >/dev/null
      "$B" logs -f -c c.yaml $job > follow.out 2>follow.err
      fb=$(wc -c < follow.out)
    else
      "$B" trigger -c c.yaml $job > /dev/null
      fb=-
    fi
    t1=$(date +%s.%N); c1=$(cpu)
    echo "$job $mode: job $(tail -1 results); cronlock CPU $(echo "($c1-$c0)/100" | bc -l | cut -c1-5) s over $(echo "$t1-$t0" | bc | cut -c1-5) s; VmRSS $(awk '/VmRSS/{print $2/1024}' /proc/$D/status) MB, VmHWM $(awk '/VmHWM/{print $2/1024}' /proc/$D/status) MB; follower got $fb bytes"
  done
done
kill $D; wait $D || true
