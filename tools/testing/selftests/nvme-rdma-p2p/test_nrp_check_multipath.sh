#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check on a namespace behind a multipath head and on one that
# is its controller's own disk (nvme_core.multipath=Y, then N), on a
# P2PDMA kernel over soft RDMA with allow_soft_p2p=1, against what the
# kernel does with each disk (the P2P submitter checks the disk's P2PDMA
# mark and refuses a disk without it):
#  - multipath=Y, a controller of ours: nvme-rdma-p2p marks the head
#    (debugfs heads: p2p 1), nrp-check reads that mark and is ready
#    through the head, and the submitter takes the head. Where the kernel
#    shows a path's queue flag (6.1 with CONFIG_BLK_DEBUG_FS), that is
#    what nrp-check says of the path.
#  - an in-tree nvme_rdma controller joins the same subsystem: the mark
#    goes, nrp-check is not ready and says why, naming that controller
#    and its transport in the head's fix, and the submitter refuses the
#    head.
#  - it leaves: the mark comes back, ready again, the submitter takes it.
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

# The module's P2P mark on head $1 (0 or 1; "none" when it lists no path
# of the head), from its debugfs heads.
head_mark() {
	awk -v h="$1" '$1 == h { m = $6 } END { print (m == "" ? "none" : m) }' "$NRP_DEBUGFS/heads"
}
# Wait up to 30 s for head $1's mark to be $2.
head_wait() {
	local i
	for ((i = 0; i < 150; i++)); do
		[ "$(head_mark "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	nrp_fail "head $1's P2P mark is $(head_mark "$1"), not $2: $(cat "$NRP_DEBUGFS/heads")"
}

# The kernel's P2PDMA queue flag of disk $1 (1 or 0), where blk-mq
# debugfs shows it; nothing where it does not. From 6.11 it is a queue
# limits feature (BLK_FEAT_PCI_P2PDMA), which the debugfs state file,
# still there, never lists: reading it there would say 0 of every queue.
kernel_flag() {
	local st=/sys/kernel/debug/block/$1/state v
	[ -r "$st" ] || return 0
	v=$(uname -r)
	v=${v%%[!0-9.]*}
	v=$(echo "$v" | awk -F. '{ print $1 * 1000 + $2 }')
	[ "$v" -lt 6011 ] || return 0
	if tr '|' '\n' <"$st" | grep -qx PCI_P2PDMA; then echo 1; else echo 0; fi
}

# What nrp-check says of path $1 of controller $2 of the head must be
# what the kernel shows of its queue ($3: 1 or 0), where it shows it.
path_vs_kernel() {
	local k want
	k=$(kernel_flag "$1")
	if [ -z "$k" ]; then
		echo "the kernel does not show $1's queue flag"
		return 0
	fi
	[ "$k" = "$3" ] || nrp_fail "the kernel's P2PDMA flag of path $1 is $k, expected $3"
	want="takes P2P pages"
	[ "$3" = 0 ] && want="does not take P2P pages"
	nrp_check_expect "namespace:$disk" "$(nrp_check_val "namespace:$disk" verdict)" \
		"path $1 of $2: $want (debugfs block/$1/state)"
	echo "path $1: the kernel's flag $k, and nrp-check reads it"
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

# nrp-check is ready through head $disk, which the kernel takes.
ready_through_head() {
	nrp_check
	nrp_check_result ready
	[ "$(nrp_check_val result namespaces)" = "$disk" ] ||
		nrp_fail "ready through '$(nrp_check_val result namespaces)', not the head $disk"
	nrp_check_expect "namespace:$disk" ok "marked by nvme-rdma-p2p: debugfs heads p2p 1"
	nrp_check_expect "namespace:$disk" ok "path $path of $NRP_CTRL: takes P2P pages"
	[ "$(nrp_check_val "namespace:$disk" data.head)" = true ] || nrp_fail "$disk not reported as a multipath head"
	[ "$(nrp_check_val "namespace:$disk" data.marked)" = true ] || nrp_fail "$disk's mark not in the JSON"
	nrp_check_expect nvme_core.multipath ok "Y: the multipath heads take P2P pages ($disk)"
	path_vs_kernel "$path" "$NRP_CTRL" 1
	submitter "$NRP_NS"
	[ "$SUB_RC" = 0 ] || nrp_fail "the kernel refuses the head $NRP_NS, which nrp-check calls ready"
	echo "head $disk: nrp-check ready through it, the P2P submitter takes it"
}

# The GPU stand-in, soft RDMA and the target. From 7.x nvmet holds
# nvme_core (lsmod: "nvme_core ... nvmet"), so nvme_core's multipath
# cannot change under a live target: each half of the test gets a
# fixture of its own, on an nvme_core loaded with its multipath first.
fixture() {
	nrp_nvme_core_multipath "$1"
	nrp_gpu_setup
	nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
	nrp_backing_dev ram 64
	nrp_nvmet_setup "$NRP_DEV"
}
fixture Y

# --- multipath=Y: the head, with our controller alone
setup Y
[ "$disk" != "$path" ] || nrp_fail "multipath=Y, but $NRP_CTRL's disk $disk has no head"
head_wait "$disk" 1
ready_through_head

# --- an in-tree nvme_rdma controller joins the subsystem
nrp_mod_loaded nvme_rdma && nrp_fail "the in-tree nvme_rdma is loaded before the test"
nrp_must modprobe --ignore-install nvme-rdma
nrp_cleanup_push "modprobe -r nvme_rdma"
nrp_must nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" -D
intree=
for c in /sys/class/nvme/nvme*; do
	[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] && intree=$(basename "$c")
done
if [ -z "$intree" ] || nrp_ctrl_is_ours "$intree"; then
	nrp_fail "no in-tree controller joined ('$intree')"
fi
head_wait "$disk" 0
# its path under the head, once its namespace scan made it
ipath=
for _ in $(seq 150); do
	ipath=$(nrp_path_disk "$intree") && break
	sleep 0.2
done
[ -n "$ipath" ] || nrp_fail "$intree's namespace joined no head"
nrp_check
nrp_check_result "not ready" "$intree (in-tree nvme_rdma)"
nrp_check_expect "namespace:$disk" fail "not marked by nvme-rdma-p2p: debugfs heads p2p 0"
nrp_check_expect "namespace:$disk" fail "in its subsystem: $intree (in-tree nvme_rdma)"
nrp_check_fix "namespace:$disk" "disconnect $intree (connect through -t $NRP_TRANSPORT instead)"
nrp_check_expect "controller:$intree" fail "rdma"
nrp_check_expect nvme_core.multipath fail "$disk"
path_vs_kernel "$ipath" "$intree" 0
submitter "$NRP_NS"
[ "$SUB_RC" = 3 ] || nrp_fail "the kernel takes the head $NRP_NS with an in-tree path, nrp-check says not ready"
echo "in-tree $intree joined: nrp-check not ready and names it, the P2P submitter refuses the head"

# --- it leaves
nrp_must nvme disconnect -d "$intree"
nrp_wait_gone "$intree" 30 || nrp_fail "$intree stays after disconnect"
head_wait "$disk" 1
ready_through_head
nrp_disconnect_all
nrp_wait_gone "$NRP_CTRL" 30 || nrp_fail "$NRP_CTRL stays after disconnect"
nrp_must modprobe -r nvme_rdma "$NRP_MOD"

# --- multipath=N: the controller's own disk, on a fresh fixture
_nrp_run_cleanups
nrp_mod_unload_tree nvme_core
nrp_mod_loaded nvme_core && nrp_fail "nvme_core stays loaded after the first half's teardown: $(lsmod | grep -E '^nvme' | tr -s ' ' | tr '\n' ';')"
fixture N
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
