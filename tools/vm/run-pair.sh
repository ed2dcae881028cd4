#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests joined by two Ethernet links: a target guest serving an NVMe-oF
# target and a host guest running a job against it. Each has two virtio-net
# NICs, each on a QEMU socket netdev bound to 127.0.0.1, so no packet
# leaves the two guests. The first link carries every test; the second is
# a second path for the multipath tests (pair_target.sh path2-on). The job in the host guest can ask for faults only the machine
# outside both guests can make: pulling the cable, commands to the target.
#
#   tools/vm/run-pair.sh [options] -- COMMAND...
#
#   --kernel NAME             kernel of both guests, as run-guest.sh names
#                             them: stock, p2p-6.12, ... (default: stock)
#   --target-kernel KERNEL    the target guest's kernel (default: --kernel)
#   --out DIR                 DIR/host and DIR/target as run-guest.sh leaves
#                             them, DIR/pair.log the requests served
#                             (default: a new directory under /tmp)
#   --timeout SECONDS         the host job's limit (default: 1800)
#   --mem MB                  memory of each guest (default: 2048)
#   --smp N                   CPUs of the host guest (default: 2)
#   --target-smp N            CPUs of the target guest (default: 1: two
#                             guests under TCG share the machine's cores)
#   --rdma rxe|siw            soft RDMA device on both NICs (default: rxe;
#                             siw needs a kernel that has it: p2p, debug)
#
# COMMAND runs in the host guest, in the checkout, with NRP_PAIR_ROLE=host,
# NRP_PAIR_CTL (its request directory), NRP_PAIR_MAC and NRP_PAIR_MAC2 (its
# NICs), the first link's addresses NRP_TGT_IP4/6, NRP_HOST_IP4/6 and the
# second's NRP_TGT2_IP4, NRP_HOST2_IP4 in its environment. The host guest
# has the GPU stand-in (run-guest.sh's default --gpu-mem). The
# target guest runs tools/testing/selftests/nvme-rdma-p2p/pair_target.sh.
#
# Requests (lib.sh's nrp_pair_ctl makes them, this script answers):
#   wait-target SECONDS       until the target guest serves
#   link off|on [host|target|both] [1|2]
#                             carrier of a guest's NIC on link 1 (default)
#                             or 2, by QMP set_link (default both: a
#                             pulled cable)
#   target COMMAND...         a command of pair_target.sh, in the target
#   target-kill               power loss: the target's QEMU killed (its
#                             logs move to DIR/target.N, its disk stays)
#   target-boot               boot the target guest again
# A new fault is a case in pair_request (and in pair_target.sh when the
# target guest has to act).
#
# Exit status: the host job's; else 1 when the target guest failed or the
# kernel log of one of its boots (those killed by target-kill too) was not
# clean or could not be checked; 2 when a guest timed out or did not finish.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=stock tkernel= out= timeout=1800 mem=2048 smp=2 tsmp=1 rdma=rxe
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)	kernel=$2; shift 2 ;;
	--target-kernel) tkernel=$2; shift 2 ;;
	--out)		out=$2; shift 2 ;;
	--timeout)	timeout=$2; shift 2 ;;
	--mem)		mem=$2; shift 2 ;;
	--smp)		smp=$2; shift 2 ;;
	--target-smp)	tsmp=$2; shift 2 ;;
	--rdma)		rdma=$2; shift 2 ;;
	--)		shift; break ;;
	-h|--help)	sed -n '3,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'; exit 0 ;;
	*)		nrp_die "unknown option $1 (see --help)" ;;
	esac
done
[ $# -gt 0 ] || nrp_die "no command to run in the host guest (see --help)"
[ -n "$tkernel" ] || tkernel=$kernel
case $rdma in rxe|siw) ;; *) nrp_die "--rdma: rxe or siw, not '$rdma'" ;; esac

[ -n "$out" ] || out=$(mktemp -d /tmp/nrp-pair.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
hout=$out/host tout=$out/target
# (and the target boots a run before killed: their logs are checked too)
rm -rf "$hout/ctl" "$tout/ctl" "$out/pair.log" "$out"/target.[0-9]*
mkdir -p "$hout/ctl" "$tout/ctl"
# QMP sockets: a unix socket path must stay short.
qdir=$(mktemp -d /tmp/nrp-qmp.XXXXXX)

# The links: a subnet each, one MAC per guest and link.
tmac=52:54:00:98:00:01 hmac=52:54:00:98:00:02
tmac2=52:54:00:98:01:01 hmac2=52:54:00:98:01:02
link_env="NRP_TGT_IP4=10.98.0.1 NRP_HOST_IP4=10.98.0.2"
link_env+=" NRP_TGT_IP6=fd98::1 NRP_HOST_IP6=fd98::2 NRP_RDMA_TYPE=$rdma"
link_env+=" NRP_TGT2_IP4=10.98.1.1 NRP_HOST2_IP4=10.98.1.2"

hpid= tpid=
# Whatever ends this script ends both guests: run-guest.sh stops its QEMU
# when signalled; a QEMU that outlives it is killed by its pid.
stop_guests() {
	local p d q
	for p in $hpid $tpid; do
		kill "$p" 2>/dev/null || true
	done
	for p in $hpid $tpid; do
		for _ in $(seq 20); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.5
		done
	done
	for d in "$hout" "$tout"; do
		q=$(cat "$d/qemu.pid" 2>/dev/null) || continue
		# only a QEMU of ours: its command line names this directory
		if tr '\0' ' ' <"/proc/$q/cmdline" 2>/dev/null | grep -qF "$d"; then
			kill -9 "$q" 2>/dev/null || true
		fi
	done
	rm -rf "$qdir"
}
trap stop_guests EXIT
trap 'exit 143' TERM
trap 'exit 130' INT HUP

plog() { echo "[$(date +%H:%M:%S.%3N)] $*" >>"$out/pair.log"; }

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One request to a guest-side server over its request directory DIR (the
# same protocol as lib.sh's nrp_pair_ctl): DIR/NAME.req holds the command,
# the answer is NAME.out and then NAME.rc.
ctl_call() { # DIR SECONDS COMMAND...
	local dir=$1 secs=$2 f rc
	shift 2
	f=$dir/$(date +%s%N)-pair
	echo "$*" >"$f.tmp" && mv "$f.tmp" "$f.req"
	for _ in $(seq $((secs * 5))); do
		if [ -e "$f.rc" ]; then
			cat "$f.out" 2>/dev/null
			rc=$(cat "$f.rc")
			rm -f "$f".*
			return "$rc"
		fi
		sleep 0.2
	done
	rm -f "$f".*
	echo "no answer from $dir to '$*' within ${secs}s"
	return 1
}

qmp() { # GUEST COMMAND [JSON]
	"$NRP_TOP/tools/vm/qmp.py" "$qdir/$1.sock" "${@:2}"
}

set_link() { # on|off host|target|both [1|2]
	local up=true g n
	[ "$1" = off ] && up=false
	case ${3:-1} in
	1)	n=n0 ;;
	2)	n=n1 ;;
	*)	echo "link: no link '$3' (1 or 2)"; return 1 ;;
	esac
	case ${2:-both} in
	host|target)	g=$2 ;;
	both)		g="host target" ;;
	*)		echo "link: no guest '$2'"; return 1 ;;
	esac
	for g in $g; do
		qmp "$g" set_link "{\"name\": \"$n\", \"up\": $up}" >/dev/null || return 1
	done
}

# Serve one request of the host guest's job.
pair_request() {
	local secs
	case $1 in
	wait-target)
		secs=${2:-300}
		for _ in $(seq $((secs * 5))); do
			if [ -e "$tout/ctl/ready" ]; then
				cat "$tout/ctl/ready"
				grep -qx ready "$tout/ctl/ready"
				return
			fi
			kill -0 "$tpid" 2>/dev/null || { echo "the target guest ended"; return 1; }
			sleep 0.2
		done
		echo "the target guest did not come up within ${secs}s"
		return 1 ;;
	link)
		case ${2:-} in
		on|off)	set_link "$2" "${3:-both}" "${4:-1}" ;;
		*)	echo "link on|off [host|target|both] [1|2]"; return 1 ;;
		esac ;;
	target)
		shift
		ctl_call "$tout/ctl" 300 "$@" ;;
	target-kill)
		q=$(cat "$tout/qemu.pid" 2>/dev/null) || { echo "no target QEMU"; return 1; }
		kill -9 "$q" || return 1
		wait "$tpid" || true
		tpid=
		boots=$((boots + 1))
		# the disk survives the power loss, the rest is that boot's record
		mv "$tout" "$out/target.$boots"
		# killed on purpose: its status means nothing, its kernel log
		# (run-guest.sh checked it when QEMU was gone) everything
		[ "$(cat "$out/target.$boots/klog-verdict" 2>/dev/null)" = clean ] ||
			klog_bad+=" target.$boots ($(cat "$out/target.$boots/klog-verdict" 2>/dev/null || echo "no verdict"))"
		mkdir -p "$tout/ctl"
		if [ -e "$out/target.$boots/disk.img" ]; then
			mv "$out/target.$boots/disk.img" "$tout/"
		fi
		echo "target QEMU $q killed" ;;
	target-boot)
		[ -z "$tpid" ] || { echo "the target guest is running"; return 1; }
		start_target
		echo "target guest booting" ;;
	*)
		echo "unknown request '$*'"
		return 1 ;;
	esac
}

serve_requests() {
	local req base cmd rc
	for req in "$hout/ctl"/*.req; do
		[ -e "$req" ] || continue
		base=${req%.req}
		cmd=$(cat "$req")
		rm -f "$req"
		rc=0
		# shellcheck disable=SC2086
		pair_request $cmd >"$base.out" 2>&1 </dev/null || rc=$?
		if [ "$rc" = 0 ]; then
			plog "$cmd -> 0"
		else
			plog "$cmd -> $rc: $(tail -n1 "$base.out")"
		fi
		echo "$rc" >"$base.rc.tmp"
		mv "$base.rc.tmp" "$base.rc"
	done
}

# Run in the background, so exec: $! is then run-guest.sh itself, which
# stops its QEMU when signalled.
guest() { # ROLE KERNEL OUT MAC NETDEV MAC2 NETDEV2 TIMEOUT COMMAND
	local n=$smp gpu=()
	[ "$1" = target ] && n=$tsmp gpu=(--gpu-mem 0)
	exec "$NRP_TOP/tools/vm/run-guest.sh" --kernel "$2" --out "$3" --timeout "$8" \
		--mem "$mem" --smp "$n" "${gpu[@]}" --append no_timer_check \
		--qemu -netdev --qemu "$5" \
		--qemu -device --qemu "virtio-net-pci,netdev=n0,mac=$4" \
		--qemu -netdev --qemu "$7" \
		--qemu -device --qemu "virtio-net-pci,netdev=n1,mac=$6" \
		--qemu -qmp --qemu "unix:$qdir/$1.sock,server=on,wait=off" \
		-- "export NRP_PAIR_ROLE=$1 NRP_PAIR_CTL=/nrp-job/ctl NRP_PAIR_MAC=$4 NRP_PAIR_MAC2=$6 $link_env; $9" \
		>"$out/$1.log" 2>&1
}

# (no_timer_check: two TCG guests on a loaded machine can miss the boot-time
# check of the IO-APIC timer and panic.)
#
# The host guest listens and the target guest connects: a connecting QEMU
# cannot reconnect, a listening one takes the next connection, so the
# target is the side that may be restarted.
nrp_log "pair ($kernel host, $tkernel target, $rdma) starting, output in $out"
for _ in 1 2 3; do
	port=$(free_port)
	port2=$(free_port)
	[ "$port2" != "$port" ] || continue
	guest host "$kernel" "$hout" "$hmac" "socket,id=n0,listen=127.0.0.1:$port" \
		"$hmac2" "socket,id=n1,listen=127.0.0.1:$port2" "$timeout" "$*" &
	hpid=$!
	# building the kernel or module may come first
	until { ss -Htln "sport = :$port" | grep -q . && ss -Htln "sport = :$port2" | grep -q .; } ||
		! kill -0 "$hpid" 2>/dev/null; do
		sleep 0.5
	done
	kill -0 "$hpid" 2>/dev/null && break
	wait "$hpid" || true
	hpid=
	grep -q 'Address already in use' "$hout/console.log" 2>/dev/null ||
		{ tail -n 20 "$out/host.log" >&2; nrp_die "the host guest did not start"; }
done
[ -n "$hpid" ] || nrp_die "no free port for the link"
plog "host guest listening on 127.0.0.1:$port and :$port2"

boots=0 klog_bad=
start_target() {
	guest target "$tkernel" "$tout" "$tmac" "socket,id=n0,connect=127.0.0.1:$port" \
		"$tmac2" "socket,id=n1,connect=127.0.0.1:$port2" \
		$((timeout + 300)) "bash tools/testing/selftests/nvme-rdma-p2p/pair_target.sh" &
	tpid=$!
	plog "target guest connecting"
}
start_target

while kill -0 "$hpid" 2>/dev/null; do
	serve_requests
	sleep 0.2
done
hrc=0
wait "$hpid" || hrc=$?
hpid=
plog "host guest ended, status $hrc"

# Then the target: asked to stop, killed if it does not.
trc=0
if [ -z "$tpid" ]; then
	plog "no target guest running (killed and not booted again)"
elif kill -0 "$tpid" 2>/dev/null; then
	ctl_call "$tout/ctl" 120 stop >>"$out/pair.log" 2>&1 || true
	for _ in $(seq 240); do
		kill -0 "$tpid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$tpid" 2>/dev/null; then
		plog "target guest did not stop, killing it"
		kill "$tpid" 2>/dev/null || true
	fi
fi
if [ -n "$tpid" ]; then
	wait "$tpid" || trc=$?
	tpid=
	plog "target guest ended, status $trc"
fi

rc=$hrc
if [ "$trc" != 0 ]; then
	nrp_log "pair: the target guest failed (status $trc):"
	tail -n 15 "$out/target.log" >&2
	[ "$rc" != 0 ] || rc=$((trc == 2 ? 2 : 1))
fi
if [ -n "$klog_bad" ]; then
	nrp_log "pair: kernel log of a target boot killed on purpose not clean:$klog_bad"
	[ "$rc" != 0 ] || rc=1
fi
[ "$hrc" = 0 ] || tail -n 15 "$out/host.log" >&2
nrp_log "pair done, status $rc (host $hrc, target $trc)"
exit "$rc"
