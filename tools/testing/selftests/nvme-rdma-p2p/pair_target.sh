#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The target guest of tools/vm/run-pair.sh: soft RDMA on the NIC, the
# kernel nvmet-rdma target on a disk that outlives the guest, then the
# commands the host guest's tests send through the runner, until "stop":
#
#   port-off / port-on      unlink / link the subsystem on the nvmet port
#                           (the target stops listening, queues drop)
#   nvmet-stop / nvmet-start   the ports off and nvmet-rdma unloaded / loaded
#                           and the ports on again (a target restart whose
#                           namespace keeps its data; port 2 only if it was)
#   auth HOSTNQN KEY [CKEY [DHGROUP]]
#                           only HOSTNQN may connect, and it must
#                           authenticate with DH-HMAC-CHAP secret KEY (and
#                           the target with CKEY): hmac(sha256), DHGROUP
#                           (ffdhe2048 where the kernel offers it); exit 4
#                           when this kernel's nvmet has no in-band
#                           authentication
#   any-host                any host may connect again, no authentication
#   path2-on / path2-off    a second path to the subsystem: soft RDMA on
#                           the second link's NIC and nvmet port 2 on its
#                           address (run-pair.sh joins the guests by two
#                           links); off takes both away again
#   stop                    tear everything down and end the guest
#
# Writes "ready" to $NRP_PAIR_CTL/ready once it serves, or why it cannot.
. "$(dirname "$0")/lib.sh"

nrp_pair_need target
ctl=$NRP_PAIR_CTL
cfs=/sys/kernel/config/nvmet
announce() { echo "$*" >"$ctl/ready.tmp" && mv "$ctl/ready.tmp" "$ctl/ready"; }
# (port 2, when a test left it on, goes before the cleanups take its link)
trap '[ -e "$ctl/ready" ] || announce "target setup failed"
	! declare -F path2_off >/dev/null || path2_off; _nrp_run_cleanups' EXIT

nrp_rdma_nic_setup "${NRP_RDMA_TYPE:-rxe}"
# The namespace is a file in the job directory, outside the guest: it
# survives the guest (run-pair.sh's target-kill keeps it for the next
# boot). Written through 9p without a cache, what nvmet completed is there.
img=/nrp-job/disk.img
# (sparse: a test writes what it needs, up to the 1 GiB checkpoint of
# test_pair_multipath.sh)
# (grow only: an image from an earlier run in the same --out may be smaller)
truncate -s ">${NRP_PAIR_TGT_MIB:-1088}M" $img
modprobe loop
NRP_DEV=$(losetup --find --show $img) || nrp_fail "cannot set up a loop device on $img"
nrp_cleanup_push "losetup -d $NRP_DEV"
nrp_nvmet_setup "$NRP_DEV" ipv4
# The same identity on every boot, so that the host sees the same
# subsystem and namespace after a restart of this guest.
ns=$cfs/subsystems/$NRP_SUBNQN/namespaces/1
echo 0 >"$ns/enable"
echo 5f1c39a2-8d4e-4b7a-9c61-0e2d7b3a4f98 >"$ns/device_uuid"
echo 5f1c39a28d4e4b7a9c610e2d7b3a4f98 >"$ns/device_nguid"
echo 1 >"$ns/enable" || nrp_fail "cannot re-enable the namespace"
echo 98a7c3e1d2b4f506 >"$cfs/subsystems/$NRP_SUBNQN/attr_serial" ||
	nrp_fail "cannot set the subsystem serial"
echo "target: $NRP_SUBNQN on $NRP_TGT_IP4:$NRP_PORT ($NRP_NIC, $NRP_DEV)"
announce ready

port_off() { rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"; }
port_on() { ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"; }

# Port 2 on the second link, exporting the same subsystem.
path2_on() {
	local d=$cfs/ports/2
	[ -e "$d/subsystems/$NRP_SUBNQN" ] && return 0
	# in a subshell: its failure is this command's, not the guest's end
	( nrp_rdma_nic_setup "${NRP_RDMA_TYPE:-rxe}" 2 ) || return 1
	mkdir -p "$d" &&
	echo rdma >"$d/addr_trtype" &&
	echo ipv4 >"$d/addr_adrfam" &&
	echo "$NRP_TGT2_IP4" >"$d/addr_traddr" &&
	echo "$NRP_PORT" >"$d/addr_trsvcid" &&
	ln -s "$cfs/subsystems/$NRP_SUBNQN" "$d/subsystems/" || return 1
	echo "port 2 on $NRP_TGT2_IP4:$NRP_PORT"
}
# The soft RDMA device goes first, so that the port's listener goes with
# it (nrp_drop_listener says why).
# The device also when the port never came (path2-on failed after it).
path2_off() {
	local d=$cfs/ports/2
	nrp_drop_listener "$NRP_TGT2_IP4" || return 1
	[ -d "$d" ] || return 0
	rm -f "$d/subsystems/$NRP_SUBNQN" &&
	rmdir "$d"
}

# A target restart takes both ports and brings back what was on: nvmet-rdma
# cannot unload while port 2 is enabled.
path2_was=
nvmet_stop() {
	path2_was=
	[ -e "$cfs/ports/2/subsystems/$NRP_SUBNQN" ] && path2_was=1
	path2_off && port_off && modprobe -r nvmet-rdma
}
nvmet_start() {
	modprobe nvmet-rdma && port_on || return 1
	[ -z "$path2_was" ] || path2_on
}

# One command; its output is the answer.
serve() {
	case $1 in
	port-off)	port_off ;;
	port-on)	port_on ;;
	nvmet-stop)	nvmet_stop ;;
	nvmet-start)	nvmet_start ;;
	auth)		shift; nrp_nvmet_auth_host "$@" ;;
	any-host)	nrp_nvmet_allow_hosts ;;
	path2-on)	path2_on ;;
	path2-off)	path2_off ;;
	stop)		return 0 ;;
	*)		echo "unknown target command '$*'"; return 1 ;;
	esac
}

running=1
while [ $running = 1 ]; do
	for req in "$ctl"/*.req; do
		[ -e "$req" ] || continue
		base=${req%.req}
		cmd=$(cat "$req")
		rm -f "$req"
		rc=0
		# shellcheck disable=SC2086
		serve $cmd >"$base.out" 2>&1 || rc=$?
		echo "$(date +%T) target: $cmd -> $rc"
		[ "$cmd" = stop ] && running=0
		echo "$rc" >"$base.rc.tmp" && mv "$base.rc.tmp" "$base.rc"
	done
	sleep 0.2
done
exit 0
