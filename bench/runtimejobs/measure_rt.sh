#!/bin/bash
# usage: measure_rt.sh BINARY JOBS [PORTBASE] — one daemon with JOBS runtime
# jobs, nats-server ($NATS_SERVER, default nats-server on PATH) outside it:
# the time of `cronlock jobs put`, start-up to ready, RSS, goroutines, idle CPU.
bin=$1; n=$2; pb=${3:-15222}
d=$(mktemp -d)
${NATS_SERVER:-nats-server} -js -sd $d/js -p $pb -a 127.0.0.1 >$d/nats.log 2>&1 &
np=$!
sleep 0.5
cat > $d/c.yaml <<EOC
nats: {url: 'nats://127.0.0.1:$pb'}
http: {listen: '127.0.0.1:$((pb+1))'}
log: {level: info}
runtime_jobs: {enabled: true}
kinds:
  - {name: report, command: ['true']}
jobs:
  - {name: file.job, schedule: '@yearly', command: ['true']}
EOC
python3 - $n > $d/defs.yaml <<'EOP'
import sys
n=int(sys.argv[1])
print("jobs:")
zones=["Europe/Berlin","America/New_York","Asia/Tokyo","UTC"]
for i in range(n):
    print(f"  - {{name: t{i}.report, schedule: '{i%60} {i//60%24} * * *', timezone: {zones[i%4]}, kind: report, payload: {{tenant: t{i}}}}}")
EOP
t0=$(date +%s.%N)
/usr/bin/time -f "put_rss=%MKB" $bin jobs put -c $d/c.yaml -f $d/defs.yaml > $d/put.out 2> $d/put.err || { echo put failed; tail -3 $d/put.err; }
t1=$(date +%s.%N)
$bin run -c $d/c.yaml >$d/cl.log 2>&1 &
cp=$!
until curl -sf -o /dev/null http://127.0.0.1:$((pb+1))/readyz; do sleep 0.05; if ! kill -0 $cp 2>/dev/null; then echo died; tail $d/cl.log; break; fi; done
t2=$(date +%s.%N)
t3=$t2 # /readyz waits until the runtime jobs stored at the start are scheduled

sleep 20
c0=$(awk '{print $14+$15}' /proc/$cp/stat); sleep 10; c1=$(awk '{print $14+$15}' /proc/$cp/stat)
rss=$(awk '/VmRSS/{printf "%.0f", $2/1024}' /proc/$cp/status)
hwm=$(awk '/VmHWM/{printf "%.0f", $2/1024}' /proc/$cp/status)
gor=$(curl -s http://127.0.0.1:$((pb+1))/metrics | awk '/^go_goroutines/{print $2}')
sched=$(curl -s http://127.0.0.1:$((pb+1))/metrics | awk '/^cronlock_runtime_jobs\{state="scheduled"\}/{print $2}')
printf "runtime_jobs=%d scheduled=$sched put=%.1fs %s ready=%.2fs all_scheduled=%.2fs goroutines=%s rss=%sMB peak=%sMB idlecpu=%s%%\n" $n $(echo "$t1-$t0"|bc) "$(tail -1 $d/put.err)" $(echo "$t2-$t1"|bc) $(echo "$t3-$t1"|bc) $gor $rss $hwm $(echo "($c1-$c0)/10"|bc -l|xargs printf %.1f)
kill $cp; wait $cp 2>/dev/null; kill $np; wait $np 2>/dev/null
rm -rf $d
