#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The check tier runs one guest at a time by default (run-all.sh: "Kernel
# by kernel"): on stand-in guests and pairs that each hold a lock for a
# second, no two boots of the default run overlap, Debian's kernels boot
# before the built one, a host test runs at SCHED_IDLE and a guest not,
# and the run boots what two lanes do.
#
# With NRP_LANES=2, the two lanes share what is left when one of them is done
# (run-all.sh: late_run, host_help): stock 7.3's topology boot and stock
# 6.1's isolcpus shape boot run once each, in whichever lane claims them
# first, and so does every host test, with one result each wherever it
# ran. On stand-in guests and pairs (fixtures/stub-run-guest.sh in record
# mode: every test passes at once) and stand-in host tests: the first and
# the last of them, which the host tests' own two workers start with (one
# from each end of the list), end only once all the others have run (or
# fail after 30 minutes: host tests run at SCHED_IDLE beside the guests
# and the build), so the others must have run in the lanes, whatever
# the machine's load. The run's time budget is judged at the mean of the
# machine's speed measured at the start and at the end.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fix=$TOP/tools/testing/host/fixtures
# the kernels the tier builds, as if built (nothing is built here)
cache=$work/cache
mkdir -p "$cache/kernel"
ln -s "$NRP_CACHE/src" "$cache/src"
d=$(NRP_CACHE=$cache bash -c ". '$TOP/tools/vm/lib.sh'; nrp_use_kernel debug-6.12; nrp_kernel_dir debug-6.12")
mkdir -p "$d" && touch "$d/.done"

n=8
mkdir -p "$work/host"
for i in $(seq $n); do
	# the process that ran it: the first worker or a lane
	cat >"$work/host/test_h$i.sh" <<EOS
#!/bin/bash
echo "h$i \$PPID" >>"$work/ran"
# h2 spends 1.5 s of CPU (its own utime + stime, in clock ticks), for its
# result line
if [ $i = 2 ]; then
	while read -r -a st </proc/\$\$/stat && [ \$((st[13] + st[14])) -lt 150 ]; do :; done
fi
[ $i = 1 ] || [ $i = $n ] || exit 0
for _ in \$(seq 1800); do
	[ "\$(wc -l <"$work/ran")" -ge $n ] && exit 0
	sleep 1
done
echo "the other host tests did not run while this one waited"
exit 1
EOS
done
# h3 says at what scheduling policy the host tests run
sed -i "2a chrt -p \\$\\$ >\"$work/sched\"" "$work/host/test_h3.sh"
# stand-in guests and pairs that name each boot they make, say at what
# scheduling policy they run, and hold a lock for a second while they
# "run": a boot that finds it held overlaps another
for kind in guest pair; do
	real=$fix/stub-run-$kind.sh
	cat >"$work/$kind" <<EOS
#!/bin/bash
prev= o=
for a in "\$@"; do [ "\$prev" = --out ] && o=\$a; prev=\$a; done
echo "$kind \$(basename "\$o")" >>"$work/boots"
chrt -p \$\$ >>"$work/sched-boots"
if mkdir "$work/running" 2>/dev/null; then
	sleep 1
	rmdir "$work/running"
else
	echo "\$(basename "\$o")" >>"$work/overlaps"
fi
exec "$real" "\$@"
EOS
	chmod +x "$work/$kind"
done

# The default: one guest at a time. NRP_KERNELS puts the built kernel
# first, an order the lane must not follow. The stand-in run starts at
# SCHED_OTHER, as make check's own does, not at this host test's
# SCHED_IDLE, so that the policies it gives its parts show.
# (measured: no NRP_HOST_RATIO, which the host tests' lib.sh sets)
chrt --other -p 0 $$ 2>/dev/null || echo "note: cannot leave $(chrt -p $$): the policies below are inherited"
env -u NRP_HOST_RATIO -u NRP_LANES NRP_KERNELS="debug-6.12 stock stock-7.3" NRP_CACHE=$cache \
	NRP_STUB_MODE=record NRP_RUN_GUEST=$work/guest NRP_RUN_PAIR=$work/pair NRP_HOST_TESTS=$work/host \
	"$TOP/tools/testing/run-all.sh" --tier check --no-setup --out "$work/out1" >"$work/run1.log" 2>&1 ||
	{ tail -n 40 "$work/run1.log"; fail "the check tier on stand-ins failed (one lane)"; }
[ ! -e "$work/overlaps" ] || fail "one lane: boots overlapped: $(xargs <"$work/overlaps")"
dup=$(sort "$work/boots" | uniq -d)
[ -z "$dup" ] || fail "one lane: booted more than once: $dup"
order=$(grep -e '^guest guest-stock$' -e '^guest guest-stock-7.3$' -e '^guest guest-debug-6.12$' "$work/boots" |
	cut -d' ' -f2 | xargs)
[ "$order" = "guest-stock guest-stock-7.3 guest-debug-6.12" ] ||
	fail "one lane: the guests booted in the order '$order', not Debian's kernels first"
grep -q 'policy: SCHED_IDLE$' "$work/sched" 2>/dev/null ||
	fail "one lane: a host test ran at '$(cat "$work/sched" 2>/dev/null)', not SCHED_IDLE"
if grep -q 'policy: SCHED_OTHER$' <(chrt -p $$); then
	! grep -q 'SCHED_IDLE' "$work/sched-boots" ||
		fail "one lane: a guest ran at SCHED_IDLE: $(sort -u "$work/sched-boots" | xargs)"
fi
grep -q "^[0-9]* passed, 0 failed" "$work/run1.log" ||
	{ tail -n 5 "$work/run1.log"; fail "one lane: the summary is not all passed"; }
echo "one lane: $(wc -l <"$work/boots") boots, none overlapping, Debian's kernels first; host tests at SCHED_IDLE"
sort "$work/boots" >"$work/boots1"
rm -rf "$work/boots" "$work/ran" "$work/sched" "$work/sched-boots" "$work/overlaps" "$work/running"

# two lanes
env -u NRP_HOST_RATIO NRP_LANES=2 NRP_CACHE=$cache NRP_STUB_MODE=record NRP_RUN_GUEST=$work/guest \
	NRP_RUN_PAIR=$work/pair NRP_HOST_TESTS=$work/host \
	"$TOP/tools/testing/run-all.sh" --tier check --no-setup --out "$work/out" >"$work/run.log" 2>&1 ||
	{ tail -n 40 "$work/run.log"; fail "the check tier on stand-ins failed"; }

# every host test once, one result each
for i in $(seq $n); do
	c=$(grep -c "^h$i " "$work/ran")
	[ "$c" = 1 ] || fail "host test h$i ran $c times"
	c=$(grep -c "^PASS  host/h$i " "$work/run.log")
	[ "$c" = 1 ] || fail "host/h$i has $c results: $(grep "host/h$i" "$work/run.log")"
done
# each result gives the test's CPU seconds, and a line their sum
grep -q "^PASS  host/h2  ([0-9]*s, [1-3] CPU-s)$" "$work/run.log" ||
	fail "host/h2 spent 1.5 CPU-s, its result says: $(grep "host/h2 " "$work/run.log")"
grep -q "host tests: [1-9][0-9]* CPU-s$" "$work/run.log" ||
	fail "no line with the host tests' CPU seconds: $(grep "host tests" "$work/run.log")"
procs=$(cut -d' ' -f2 "$work/ran" | sort -u | wc -l)
[ "$procs" -ge 3 ] || fail "the host tests ran in $procs processes: no lane helped the two workers"
echo "$n host tests, each run once, in $procs processes"

# the boots either lane may take: once each
for b in guest-stock-7.3-topology guest-stock-smp2-isolcpus_1; do
	c=$(grep -cx "guest $b" "$work/boots")
	[ "$c" = 1 ] || fail "$b booted $c times"
	grep -q "PASS  ${b#guest-}/" "$work/run.log" || fail "no result of ${b#guest-}"
done
# and every other boot of the tier once
dup=$(sort "$work/boots" | uniq -d)
[ -z "$dup" ] || fail "booted more than once: $dup"
echo "boots: $(cut -d' ' -f2 "$work/boots" | sort | xargs)"
# one lane boots what two do
sort "$work/boots" | diff "$work/boots1" - >/dev/null ||
	fail "one lane and two boot different sets: $(sort "$work/boots" | diff "$work/boots1" - | grep '^[<>]' | xargs)"
# the budget judged at the machine's speed measured at both ends of the run
line=$(grep "suite/time-budget" "$work/run.log")
[[ $line =~ at\ speed\ ([0-9]+)%\ \(([0-9]+)%\ at\ the\ start,\ ([0-9]+)%\ at\ the\ end\) ]] ||
	fail "the budget's speed is not the start's and the end's: $line"
[ "${BASH_REMATCH[1]}" = $(((BASH_REMATCH[2] + BASH_REMATCH[3]) / 2)) ] ||
	fail "the budget's speed is not the mean of the two: $line"
echo "budget: $line"
grep -q "^[0-9]* passed, 0 failed" "$work/run.log" ||
	{ tail -n 5 "$work/run.log"; fail "the summary is not all passed"; }
exit 0
