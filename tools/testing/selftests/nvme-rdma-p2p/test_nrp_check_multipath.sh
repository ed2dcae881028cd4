#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check on a namespace behind a multipath head and on one that
# is its controller's own disk (nvme_core.multipath=Y, then N), on a
# P2PDMA kernel over soft RDMA with allow_soft_p2p=1, against what the
# kernel does with each disk:
#  - multipath=Y: the head is what user space opens. Whatever nrp-check
#    says of it must not contradict the kernel: where the P2P submitter
#    refuses the head (its queue lacks the P2PDMA flag, as on 6.1 and
#    6.12 today), the head is "fail", or "unknown" where the kernel does
#    not show the head's flag (6.1: a bio-based queue has no blk-mq
#    debugfs state), and then the answer is "cannot confirm", never
#    "ready"; where the submitter takes it, "ok" or "unknown". The head's
#    path is shown with its own capability, and the multipath fact gives
#    the fix (nvme_core.multipath=N).
#  - multipath=N: the controller's own disk takes P2P pages, nrp-check is
#    ready through it, and the submitter takes it.
. "$(dirname "$0")/lib_check.sh"

command -v python3 >/dev/null || nrp_fail "python3 is not installed"
nrp_p2p_require

# The kernel's answer for disk $1, in SUB_RC: 0 when the P2P submitter
# took it for a 1 MiB checkpoint, 3 when it refused it (its queue lacks
# P2PDMA); anything else fails.
submitter() {
	local out
	out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$1" --size 1M --stats none 2>&1)
	SUB_RC=$?
	case $SUB_RC in
	0|3) ;;
	*) nrp_fail "p2p-checkpoint to $1: exit $SUB_RC: $out" ;;
	esac
}

# The target, soft RDMA and our module with multipath=$1, connected.
setup() {
	nrp_nvme_core_multipath "$1"
	nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
	nrp_connect
	NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
	disk=$(basename "$NRP_NS")
	path=$(nrp_path_disk "$NRP_CTRL")
}

nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"

# --- multipath=Y: the head
setup Y
[ "$disk" != "$path" ] || nrp_fail "multipath=Y, but $NRP_CTRL's disk $disk has no head"
nrp_check
submitter "$NRP_NS"
rc=$SUB_RC
v=$(nrp_check_val "namespace:$disk" verdict)
echo "head $disk: nrp-check '$v', the P2P submitter exits $rc"
[ "$(nrp_check_val "namespace:$disk" data.head)" = true ] || nrp_fail "$disk not reported as a multipath head"
nrp_check_expect "namespace:$disk" "$v" "path $path of $NRP_CTRL: takes P2P pages"
if [ "$rc" = 3 ]; then
	case $v in
	fail)	nrp_check_result "not ready" ;;
	unknown)
		nrp_check_result "cannot confirm" "$disk"
		nrp_check_expect "namespace:$disk" unknown "multipath head's P2PDMA flag" ;;
	*)	nrp_fail "nrp-check says '$v' of $disk, which the kernel refuses for P2P pages" ;;
	esac
	nrp_check_fix "namespace:$disk" "nvme_core.multipath=N"
	case $(nrp_check_val nvme_core.multipath verdict) in
	warn|fail) nrp_check_fix nvme_core.multipath "nvme_core.multipath=N" ;;
	*) nrp_fail "multipath=Y with a head that refuses P2P: $(nrp_check_val nvme_core.multipath detail)" ;;
	esac
else
	case $v in
	ok|unknown) ;;
	*) nrp_fail "nrp-check says '$v' of $disk, which the kernel takes for P2P pages" ;;
	esac
fi
nrp_disconnect_all
nrp_wait_gone "$NRP_CTRL" 30 || nrp_fail "$NRP_CTRL stays after disconnect"
nrp_must modprobe -r $NRP_MOD

# --- multipath=N: the controller's own disk
setup N
[ "$disk" = "$path" ] || nrp_fail "multipath=N, but $NRP_CTRL's disk $disk is not its own ($path)"
nrp_check
nrp_check_result ready
nrp_check_expect nvme_core.multipath ok "N"
nrp_check_expect "namespace:$disk" ok "controller's own disk of $NRP_CTRL, takes P2P pages"
submitter "$NRP_NS"
[ "$SUB_RC" = 0 ] || nrp_fail "the kernel refuses $NRP_NS, which nrp-check says takes P2P pages"
echo "own disk $disk: nrp-check 'ok', the P2P submitter takes it"
nrp_pass
