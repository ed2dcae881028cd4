#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Per-queue counters and tools/nrp-stat:
#  - debugfs queue_stats has one row per queue (admin first) and the rows
#    add up to the controller's stats;
#  - nrp-stat prints totals per controller and queue, --json the same
#    numbers, and they move by what an I/O run did on the I/O queues;
#  - nrp-stat -i prints rates per interval: non-zero on the I/O queues
#    while fio runs, zero there when idle; -i --json one object a line.
. "$(dirname "$0")/lib.sh"

STAT=$(cd "$(dirname "$0")/../../../.." && pwd)/tools/nrp-stat
[ -x "$STAT" ] || nrp_fail "$STAT missing"
command -v python3 >/dev/null || nrp_skip "python3 not installed"

nrp_std_setup 64
nrp_connect --nr-io-queues=2; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
qs=$NRP_DEBUGFS/$ctrl/queue_stats
[ -r "$qs" ] || nrp_fail "no $qs"
cat "$qs"

# queue rows: admin, then one per I/O queue the controller has
rows=$(($(wc -l <"$qs") - 1))
pd=$(nrp_path_disk "$ctrl") || nrp_fail "no path disk"
nrp_expect "queue rows (admin and the hardware queues of $pd)" "$rows" \
	$((1 + $(ls -d /sys/block/"$pd"/mq/[0-9]* | wc -l)))
nrp_expect "queue 0 type" "$(awk 'NR == 2 { print $1, $2 }' "$qs")" "0 admin"

# JSON of nrp-stat; $1: python expression over j (the parsed object)
jq_() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }
io_sum() { # COUNTER: that counter summed over the I/O queues of the snapshot on stdin
	jq_ "sum(q['counters']['$1'] for q in j['controllers']['$ctrl']['queues'] if q['qid'] > 0)"
}

# rows add up to the controller totals (a keep-alive may land between the
# two reads: try a few times)
sums_match() {
	local j
	j=$("$STAT" --json "$ctrl") || return 1
	echo "$j" | jq_ "all(sum(q['counters'][k] for q in j['controllers']['$ctrl']['queues']) == j['controllers']['$ctrl']['counters'][k] for k in j['controllers']['$ctrl']['queues'][0]['counters'])"
}
ok=
for i in 1 2 3 4 5; do
	[ "$(sums_match)" = True ] && { ok=1; break; }
	sleep 0.3
done
[ -n "$ok" ] || nrp_fail "queue rows do not add up to the controller's counters"
echo "queue rows add up to the controller's counters"

# one-shot text mode
out=$("$STAT" "$ctrl") || nrp_fail "nrp-stat $ctrl failed"
echo "$out"
echo "$out" | grep -q "^$ctrl  totals" || nrp_fail "no title line for $ctrl"
echo "$out" | grep -q "^0 *admin " || nrp_fail "no admin queue row"
echo "$out" | grep -q "^1 *[a-z]* " || nrp_fail "no I/O queue row"
echo "$out" | grep -q "^all " || nrp_fail "no total row"
"$STAT" -a "$ctrl" | grep -q "bogus_remote_invalidations" || nrp_fail "-a lacks a counter"
"$STAT" nvme999 >/dev/null 2>&1 && nrp_fail "nrp-stat accepted an unknown controller"

# numbers move with I/O: 128 writes of 64 KiB
before=$("$STAT" --json "$ctrl") || nrp_fail "nrp-stat --json failed"
nrp_fio_verify "$dev" --rw=write --bs=64k --size=8m --do_verify=0 --verify=0
after=$("$STAT" --json "$ctrl")
cmds=$(($(echo "$after" | io_sum commands) - $(echo "$before" | io_sum commands)))
bytes=$(($(echo "$after" | io_sum host_bytes_mapped) - $(echo "$before" | io_sum host_bytes_mapped)))
[ "$cmds" -ge 128 ] || nrp_fail "I/O queues counted $cmds commands for 128 writes"
nrp_expect "host bytes on the I/O queues" "$bytes" $((8 << 20))

# interval mode while fio runs (long enough for both runs of nrp-stat,
# whose python starts slowly under TCG), then idle
fio --name=nrp-bg --filename="$dev" --direct=1 --rw=randread --bs=4k \
	--time_based --runtime=60 --output=/dev/null &
fpid=$!
nrp_cleanup_push "kill $fpid 2>/dev/null"
sleep 2
txt=$("$STAT" -i 1 -c 2 "$ctrl") || nrp_fail "nrp-stat -i 1 -c 2 failed"
js=$("$STAT" -i 1 -c 2 --json "$ctrl") || nrp_fail "nrp-stat -i 1 -c 2 --json failed"
nrp_running $fpid || nrp_fail "background fio ended before the measurement did"
kill $fpid
wait $fpid 2>/dev/null
echo "$txt"
nrp_expect "text intervals" "$(echo "$txt" | grep -c "^$ctrl  rates per second")" 2
nrp_expect "JSON intervals" "$(echo "$js" | grep -c .)" 2
busy=$(echo "$js" | head -n1 | python3 -c "import json, sys; j = json.load(sys.stdin); print(int(sum(q['counters']['commands'] for q in j['rates']['$ctrl']['queues'] if q['qid'] > 0)))")
[ "$busy" -gt 0 ] || nrp_fail "rate of I/O-queue commands under fio: $busy"
echo "under fio: $busy commands/s on the I/O queues"
idle=$("$STAT" -i 1 -c 1 --json "$ctrl" | python3 -c "import json, sys; j = json.load(sys.stdin); print(int(sum(q['counters']['commands'] for q in j['rates']['$ctrl']['queues'] if q['qid'] > 0)))")
nrp_expect "idle rate of I/O-queue commands" "$idle" 0
nrp_pass
