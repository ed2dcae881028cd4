# SPDX-License-Identifier: GPL-2.0
# Fixtures of the multipath tests, on top of lib_p2p.sh: a second path to the
# test subsystem (its own veth pair, soft RDMA devices and nvmet port), and
# ways to take a target port away and back.
. "$(dirname "${BASH_SOURCE[0]}")/lib_p2p.sh"

NRP_TGT2_IP4=${NRP_TGT2_IP4:-10.99.1.1}
NRP_HOST2_IP4=${NRP_HOST2_IP4:-10.99.1.2}
NRP_CFS=/sys/kernel/config/nvmet

# A second veth pair (nrp-t2, nrp-h2) with soft RDMA devices on both ends:
# a second link beside nrp_rdma_setup's.
nrp_second_link() {
	local type=${NRP_RDMA_TYPE:-rxe}
	ip link add nrp-t2 type veth peer name nrp-h2 || nrp_fail "cannot create the second veth pair"
	nrp_cleanup_push "ip link del nrp-t2"
	ip addr add "$NRP_TGT2_IP4/24" dev nrp-t2
	ip addr add "$NRP_HOST2_IP4/24" dev nrp-h2
	ip link set nrp-t2 up
	ip link set nrp-h2 up
	nrp_rdma_link "$type" nrp-t2 "nrp_${type}_t2"
	nrp_rdma_link "$type" nrp-h2 "nrp_${type}_h2"
}

# The second link, and nvmet port 2 on it exporting the test subsystem
# (nrp_nvmet_setup made port 1).
nrp_second_path() {
	local d=$NRP_CFS/ports/2
	nrp_second_link
	mkdir "$d" || nrp_fail "cannot create nvmet port 2"
	nrp_cleanup_push "rmdir $d"
	echo rdma >"$d/addr_trtype"
	echo ipv4 >"$d/addr_adrfam"
	echo "$NRP_TGT2_IP4" >"$d/addr_traddr"
	echo "$NRP_PORT" >"$d/addr_trsvcid"
	nrp_port_on 2 || nrp_fail "cannot enable nvmet port 2"
	nrp_cleanup_push "rm -f $d/subsystems/$NRP_SUBNQN"
	nrp_cleanup_push "nrp_drop_listener $NRP_TGT2_IP4"
}

# A namespace whose every command takes $1 ms (null_blk, memory-backed,
# timer completions), $2 MiB, left in NRP_DEV: the paths' tags fill up and
# requests queue behind them, which a RAM disk answering at once under TCG
# never lets happen.
nrp_slow_backing() {
	local nb=/sys/kernel/config/nullb/nrpslow
	modprobe configfs 2>/dev/null
	mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
	modprobe null_blk nr_devices=0 || nrp_fail "no null_blk"
	nrp_cleanup_push "modprobe -r null_blk"
	mkdir $nb || nrp_fail "cannot create a null_blk device"
	nrp_cleanup_push "rmdir $nb"
	echo 1 >$nb/memory_backed
	echo 2 >$nb/irqmode
	echo $(($1 * 1000000)) >$nb/completion_nsec
	echo "$2" >$nb/size
	echo 1 >$nb/power || nrp_fail "cannot power on the null_blk device"
	nrp_cleanup_push "echo 0 >$nb/power"
	NRP_DEV=/dev/nrpslow
	[ -b $NRP_DEV ] || NRP_DEV=/dev/nullb$(cat $nb/index)
}

# ANA state $2 (optimized, non-optimized, inaccessible...) of nvmet port
# $1's group 1, where the test subsystem's namespace is.
nrp_ana() { echo "$2" >"$NRP_CFS/ports/$1/ana_groups/1/ana_state"; }

# Our controller $1, the one path of head $2, loses its port (1); a P2P
# checkpoint through the head (output in $3) then waits in the head for a
# path, and debugfs fault_requeue_hold takes the waiting bios off the
# head's list and holds them, as the core's requeue work does before it
# submits them again. The checkpoint's pid is left in NRP_HELD_CKPT, the
# count held in NRP_HELD. (Not to be run in $(...): it registers
# cleanups.)
nrp_p2p_hold_waiting() { # CTRL HEAD LOG
	local hold=$NRP_DEBUGFS/fault_requeue_hold
	[ -w "$hold" ] || nrp_fail "no debugfs fault_requeue_hold"
	nrp_cleanup_push "echo 0 >$hold"
	nrp_port_off 1 || nrp_fail "cannot take nvmet port 1 away"
	nrp_cleanup_push "nrp_port_on 1"
	nrp_wait_state "$1" 30 connecting || nrp_fail "$1 did not leave live ($(nrp_ctrl_state "$1"))"
	"$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "/dev/$2" --size 8M --chunk 1M --qd 8 \
		--stats none >"$3" 2>&1 &
	NRP_HELD_CKPT=$!
	nrp_cleanup_push "kill $NRP_HELD_CKPT"
	nrp_dmesg_wait "$2: no usable path - requeuing I/O" 30 ||
		nrp_fail "the P2P checkpoint did not wait in $2: $(tail -n 3 "$3")"
	echo 1 >"$hold"
	NRP_HELD=$(cat "$hold")
	[ "$NRP_HELD" -gt 0 ] || nrp_fail "no bio held off $2"
}

# Load the in-tree nvme_rdma for a controller of the test subsystem that
# connects after one of ours lost its port: nvmet freed the controller ID
# of ours with its port, which the host would refuse as a duplicate of
# ours, so nvmet's IDs move on.
nrp_intree_after_ours() {
	nrp_must modprobe --ignore-install nvme-rdma
	nrp_cleanup_push "modprobe -r nvme_rdma"
	echo 100 >"$NRP_CFS/subsystems/$NRP_SUBNQN/attr_cntlid_min" ||
		nrp_fail "cannot move nvmet's controller IDs on"
}

# Take nvmet port $1 away from the subsystem (its connections drop, new
# ones are refused) and give it back.
nrp_port_off() { rm "$NRP_CFS/ports/$1/subsystems/$NRP_SUBNQN"; }
nrp_port_on() {
	[ -e "$NRP_CFS/ports/$1/subsystems/$NRP_SUBNQN" ] ||
		ln -s "$NRP_CFS/subsystems/$NRP_SUBNQN" "$NRP_CFS/ports/$1/subsystems/"
}

# Counter $2 of controller $1 summed over its I/O queues (queue_stats):
# what the data of the namespace's I/O did, without the admin queue's own
# traffic (a reconnect's Identify and log pages are host memory).
nrp_io_stat() {
	awk -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i; next }
		$1 > 0 { s += $c } END { print s + 0 }' "$NRP_DEBUGFS/$1/queue_stats"
}

# Connect through port $1's address (1 or 2) with $2... as nvme-cli
# options; the controller is left in NRP_CTRL.
nrp_connect_path() {
	local p=$1 addr out c before
	shift
	addr=$NRP_TGT_IP4
	[ "$p" = 2 ] && addr=$NRP_TGT2_IP4
	before=$(ls /sys/class/nvme 2>/dev/null)
	out=$(nvme connect -t "$NRP_TRANSPORT" -a "$addr" -s "$NRP_PORT" \
		-n "$NRP_SUBNQN" "$@" 2>&1) || nrp_fail "connect through port $p failed: $out"
	nrp_cleanup_push nrp_disconnect_all
	NRP_CTRL=
	for c in $(ls /sys/class/nvme); do
		echo "$before" | grep -qx "$c" || NRP_CTRL=$c
	done
	[ -n "$NRP_CTRL" ] || nrp_fail "no new controller after connecting through port $p: $out"
}

# The head disk (/dev/nvmeXnY) of the test subsystem's namespace 1, with
# the I/O policy $1 (default: round-robin, so that every path carries I/O).
nrp_head_dev() {
	local d n i
	for i in $(seq 50); do
		for d in /sys/class/nvme-subsystem/*; do
			[ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$NRP_SUBNQN" ] || continue
			echo "${1:-round-robin}" >"$d/iopolicy" 2>/dev/null
			for n in "$d"/nvme*n1; do
				[ -b "/dev/$(basename "$n")" ] && { echo "/dev/$(basename "$n")"; return 0; }
			done
		done
		sleep 0.2
	done
	return 1
}

# The path disk of controller $1 under the head (nvmeXcYnZ), in sysfs.
nrp_path_sysfs() {
	local p
	p=$(ls -d /sys/class/nvme/"$1"/nvme*c*n1 2>/dev/null | head -n1)
	[ -n "$p" ] && echo "$p"
}

# How long a failed path may keep requests that must fail over: $1
# seconds (default 8) scaled by the host's slowness (NRP_SLOW), and never
# 25 s or more: under the 30 s I/O timeout that a failover must not wait
# for, on any host. Tests assert it from the moment the path's controller
# leaves LIVE.
nrp_failover_bound() {
	local b=$((${1:-8} * NRP_SLOW))
	[ "$b" -lt 25 ] || b=24
	echo "$b"
}

# Requests that hold a tag of path disk $1 (a sysfs disk directory),
# started or not, into NRP_TAGGED: the busy count of every hardware
# queue's tags in blk-mq's debugfs (bitmap_tags, not the reserved tag of
# a connect). inflight counts only started requests; one that got a tag
# and waits on a quiesced queue (dispatch list, plug flush) is counted
# here alone. False when the kernel has no blk-mq debugfs for the disk.
# Bash builtins alone, so that a look costs milliseconds, not the seconds
# a fork takes in a TCG guest on a loaded host.
_nrp_tags_busy() { # DIR
	local f line bt d=/sys/kernel/debug/block/${1##*/}
	NRP_TAGGED=0
	[ -d "$d" ] || return 1
	for f in "$d"/hctx*/tags; do
		bt=0
		while read -r line; do
			case $line in
			bitmap_tags:*)	bt=1 ;;
			*tags:*)	bt=0 ;;
			busy=*)		[ $bt = 0 ] || NRP_TAGGED=$((NRP_TAGGED + ${line#busy=})) ;;
			esac
		done 2>/dev/null <"$f"
	done
	# (a tags file gone as its queue goes holds nothing)
	return 0
}

# What path disk $1 holds that must fail over, into NRP_HELD: requests
# started (its inflight) and those that hold a tag of it unstarted
# (_nrp_tags_busy); builtins alone. A disk gone holds nothing; a disk
# without blk-mq debugfs cannot be looked at, and fails the test.
_nrp_path_held() { # DIR
	local r w
	NRP_HELD=0
	{ read -r r w <"$1/inflight"; } 2>/dev/null || return 0
	_nrp_tags_busy "$1" ||
		nrp_fail "no blk-mq debugfs for ${1##*/}: requests waiting on its queue cannot be counted"
	NRP_HELD=$((r + w + NRP_TAGGED))
}

# When controllers CTRL... had all left LIVE, in nrp_now's form: the
# latest time the kernel logged one's "starting error recovery" since the
# test's mark (our transport makes that change and logs it in one place,
# nrp_error_recovery()), on the log's own clock, carried to the wall clock
# through a line of ours written to the log now. A test's poll sees the
# state a look later, and a look can take seconds in a loaded TCG guest:
# a bound counted from the poll gives a stall that long for free
# (pair_multipath passed a 25 s stall in the error work at 24.0 s of its
# 24 s bound). SEEN is when the poll saw them gone: a later time is never
# taken, and without the line for each (not our transport's log) SEEN is
# the answer.
nrp_left_live_at() { # SEEN CTRL...
	local seen=$1 tag="nrp-clock-$$-$RANDOM" now=${EPOCHREALTIME/,/.}
	shift
	{ echo "$tag $now" >/dev/kmsg; } 2>/dev/null || { echo "$seen"; return 0; }
	nrp_dmesg_since | awk -v cs="$*" -v tag="$tag" -v seen="$seen" '
		function ts(l) { sub(/^\[ */, "", l); sub(/\].*/, "", l); return l + 0 }
		BEGIN { n = split(cs, c, " ") }
		/: starting error recovery/ {
			for (i = 1; i <= n; i++)
				if (index($0, " " c[i] ": starting error recovery"))
					at[i] = ts($0)
		}
		index($0, tag) { mark = ts($0); wall = $NF }
		END {
			if (mark == "") { print seen; exit }
			last = 0
			for (i = 1; i <= n; i++) {
				if (!(i in at)) { print seen; exit }
				if (at[i] > last) last = at[i]
			}
			t = wall - (mark - last)
			if (t > seen) t = seen
			printf "%.3f\n", t
		}'
}

# Wait up to SECS seconds for controller CTRL to leave LIVE; false if it
# stays. NRP_LEFT is then when it left, as the kernel logged it
# (nrp_left_live_at), which failover bounds count from. Builtins only, as
# nrp_wait_state: tests wait so while fio runs.
nrp_wait_left_live() { # CTRL SECS
	local i st
	NRP_LEFT=
	for ((i = 0; i < $2 * 10; i++)); do
		st=
		read -r st 2>/dev/null <"/sys/class/nvme/$1/state"
		if [ "$st" != live ]; then
			NRP_LEFT=$(nrp_left_live_at "$(nrp_now)" "$1")
			return 0
		fi
		nrp_nap 0.1
	done
	return 1
}

# No data command of controllers CTRL... timed out since the test's mark
# (nrp_expect_failover's last check). A failover that left path 2's
# requests to their I/O timeout (30 s from each one's start) can still
# empty the path within a bound counted from leaving LIVE when leaving
# took seconds: with the link pulled, nvme1 left LIVE 6.6 s after the
# pull, and with a 25 s stall in the error work its requests were ended
# by nrp_timeout() 22.9 s after that, inside the 24 s bound
# (pair_multipath). The transport logs each timeout ("I/O TAG QID N
# timeout", as in-tree); the keep-alive's, on the admin queue (QID 0), is
# how a dead link is noticed, and does not count.
_nrp_expect_no_io_timeout() { # CTRL...
	local pat lines
	pat=" ($(IFS='|'; echo "$*")): I/O [0-9]+ QID [1-9][0-9]* timeout"
	lines=$(nrp_dmesg_since | grep -E "$pat")
	[ -z "$lines" ] ||
		nrp_fail "$(grep -c . <<<"$lines") data commands timed out on $*: the failover waited for the I/O timeout ($(head -n1 <<<"$lines" | sed 's/^\[[^]]*\] //'))"
}

# A time of nrp_now's in microseconds, as ${EPOCHREALTIME//[.,]/} counts.
_nrp_usecs() { echo $((${1%.*} * 1000000 + 10#${1#*.} * 1000)); }

# Wait until the path disks DIR... (nvmeXcYnZ) hold no request that must
# fail over, and fail unless they emptied within BOUND seconds of T
# (nrp_now when their controllers left LIVE: nrp_wait_left_live;
# nrp_failover_bound), or if a data command of those controllers (nvmeY)
# timed out meanwhile: what the I/O timeout ended did not fail over. WHAT
# names them in the messages. A look that sees nothing held proves the
# drain ended by then; one that began past the bound and still sees
# requests proves it late. Looks are builtins only (_nrp_path_held): a
# slow one neither passes a late drain nor fails one on time. Leaves the
# seconds from T to the end of the look that saw them empty in
# NRP_FAILOVER_SECS.
nrp_expect_failover() { # WHAT T BOUND DIR...
	local what=$1 t bound=$3 start now held p d ctrls=()
	t=$(_nrp_usecs "$2")
	shift 3
	for p in "$@"; do
		d=${p##*/}
		[[ $d =~ ^nvme[0-9]+c([0-9]+)n[0-9]+$ ]] ||
			nrp_fail "$p is no path disk of a multipath head (nvmeXcYnZ)"
		ctrls+=("nvme${BASH_REMATCH[1]}")
	done
	while :; do
		start=${EPOCHREALTIME//[.,]/}
		held=0
		for p in "$@"; do
			_nrp_path_held "$p"
			held=$((held + NRP_HELD))
		done
		now=${EPOCHREALTIME//[.,]/}
		NRP_FAILOVER_SECS=$((now - t))
		NRP_FAILOVER_SECS=$((NRP_FAILOVER_SECS / 1000000)).$((NRP_FAILOVER_SECS / 100000 % 10))
		[ "$held" = 0 ] && break
		[ $((start - t)) -le $((bound * 1000000)) ] ||
			nrp_fail "$what still held $held requests in a look begun more than ${bound}s after leaving live: the failover waits"
		nrp_nap 0.1
	done
	_nrp_expect_no_io_timeout "${ctrls[@]}"
}

# Requests in flight on path $1 (a sysfs disk directory): reads + writes.
nrp_path_inflight() { awk '{ print $1 + $2 }' "$1/inflight" 2>/dev/null; }

# Requests that hold a tag of path $1, started or not (_nrp_tags_busy),
# printed; empty when the kernel has no blk-mq debugfs.
nrp_path_tagged() { _nrp_tags_busy "$1" && echo "$NRP_TAGGED"; }

# Data I/Os path $1 has completed (reads + writes).
nrp_path_ios() { awk '{ print $1 + $5 }' "$1/stat" 2>/dev/null; }

# Set-ups of the I/O queues of controllers $@ in the kernel log since the
# test's mark: each (re)connect attempt that got as far as its I/O
# queues says "creating N I/O queues" once.
nrp_ioq_setups() {
	local c pat=
	for c in "$@"; do pat+="${pat:+|}$c"; done
	nrp_dmesg_since | grep -cE "nvme ($pat): creating [0-9]+ I/O queues"
}

# The host memory the I/O queues of a multipath checkpoint mapped ($1
# bytes) is Connect data alone: 1 KiB on each of the $3 I/O queues, for
# each reconnect ($2, which succeeded) and at most for each attempt that
# set its I/O queues up ($4, since the test's start: an attempt can fail
# after its I/O queue Connects, as a keep-alive timeout under a loaded
# TCG host made one do).
nrp_expect_connect_data() { # BYTES RECONNECTS IOQUEUES SETUPS
	local hb=$1 rc=$2 nq=$3 su=$4
	[ $((hb % 1024)) = 0 ] && [ "$hb" -ge $((rc * nq * 1024)) ] &&
		[ "$hb" -le $((su * nq * 1024)) ] ||
		nrp_fail "host bytes mapped over both paths: $hb, not Connect data of $nq I/O queues for $rc reconnect(s) to $su I/O queue set-up(s) ($((rc * nq * 1024)) to $((su * nq * 1024)))"
	echo "host bytes: $hb, the Connect data of $nq I/O queues, $rc reconnect(s), $su I/O queue set-up(s)"
}
