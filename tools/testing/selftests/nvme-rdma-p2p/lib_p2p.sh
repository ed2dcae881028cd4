# SPDX-License-Identifier: GPL-2.0
# Fixtures of the P2PDMA tests, on top of lib.sh: the GPU stand-in
# (tools/nrp-gpu), and a controller of ours whose namespace takes P2PDMA
# pages.
#
# nvme_core's multipath is what the boot says (run-guest.sh --multipath;
# Debian's default is Y): with Y the namespace is the multipath head disk,
# which our module marks as taking P2PDMA pages while every controller of
# its subsystem is one of ours that can carry them (rdma_p2p_mpath.c);
# with N it is the controller's own disk. The tests pass either way.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NRP_P2P_TOOL=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)/tools/p2p-checkpoint/p2p-checkpoint
NRP_GPU_MOD=nrp_gpu

# Skip unless the kernel has P2PDMA. On a kernel without it, first check
# that our module says so: in sysfs, and once in the log.
nrp_p2p_require() {
	local st n
	if grep -qw pci_p2pdma_add_resource /proc/kallsyms; then
		return 0
	fi
	nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD loaded before the test"
	nrp_dmesg_mark
	nrp_load_ours
	st=$(cat /sys/module/$NRP_MOD/parameters/p2p)
	[ "$st" = "unavailable: kernel built without CONFIG_PCI_P2PDMA" ] ||
		nrp_fail "parameter p2p says '$st' on a kernel without P2PDMA"
	n=$(nrp_dmesg_since | grep -c "nvme_rdma_p2p: P2PDMA unavailable")
	[ "$n" = 1 ] || nrp_fail "'P2PDMA unavailable' logged $n times at load, not once"
	nrp_must modprobe -r $NRP_MOD
	nrp_skip "kernel $(uname -r) lacks P2PDMA: nvme-rdma-p2p reports '$st'"
}

# The sysfs directory of the first QEMU ivshmem device (the GPU stand-in),
# left in NRP_GPU_PCI; false if there is none. (read, not cat: forks are
# slow in a TCG guest with a debug kernel)
nrp_gpu_find() {
	local d vendor device
	NRP_GPU_PCI=
	for d in /sys/bus/pci/devices/*; do
		read -r vendor <"$d/vendor"
		read -r device <"$d/device"
		if [ "$vendor" = 0x1af4 ] && [ "$device" = 0x1110 ]; then
			NRP_GPU_PCI=$d
			return 0
		fi
	done
	return 1
}

# Bind the GPU stand-in; its device node is left in NRP_GPU and the size
# of its window in NRP_GPU_WINDOW (bytes). Skips without an ivshmem device.
# NRP_GPU_ARGS: module parameters (window_mb=N leaves the rest of the BAR
# in the published pool, for user space to map through p2pmem/allocate).
nrp_gpu_setup() {
	local m info
	nrp_gpu_find ||
		nrp_skip "no QEMU ivshmem device (PCI 1af4:1110) to play the GPU (run-guest.sh --gpu-mem)"
	[ -x "$NRP_P2P_TOOL" ] || nrp_fail "$NRP_P2P_TOOL not built"
	# shellcheck disable=SC2086
	nrp_must modprobe $NRP_GPU_MOD ${NRP_GPU_ARGS:-}
	nrp_cleanup_push "modprobe -r $NRP_GPU_MOD"
	NRP_GPU=
	for m in "$NRP_GPU_PCI"/misc/nrp-gpu*; do
		[ -e "$m" ] && NRP_GPU=/dev/$(basename "$m")
	done
	[ -c "$NRP_GPU" ] || nrp_fail "no nrp-gpu device node for $NRP_GPU_PCI"
	info=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --info) || nrp_fail "INFO on $NRP_GPU failed"
	NRP_GPU_WINDOW=$(echo "$info" | awk '$1 == "window_size" { print $2 }')
	echo "$info" | grep -qx "p2pdma 1" || nrp_fail "$NRP_GPU: window pages are not P2PDMA pages"
}

# Skip unless user space can map P2P memory and do O_DIRECT from it:
# Linux 6.2 and later export a published provider's pool as the sysfs
# file p2pmem/allocate (and pin such pages for queues with P2PDMA,
# FOLL_PCI_P2PDMA); 6.1 has neither. Needs the GPU stand-in bound (on a
# kernel with P2PDMA, nrp_p2p_require). Only a kernel that lacks it may
# skip: on 6.2 and later, or where the kernel has the mapping code, a
# missing file is a failure (the stand-in did not publish its pool, the
# file moved), not a reason to skip.
nrp_p2p_user_require() {
	[ -e "$NRP_GPU_PCI/p2pmem/allocate" ] && return 0
	if nrp_p2p_user_capable || nrp_kernel_at_least 6 2; then
		nrp_fail "Linux $(uname -r) has user-space P2PDMA (6.2 and later), but the GPU stand-in $NRP_GPU_PCI has no p2pmem/allocate"
	fi
	nrp_skip "Linux $(uname -r) has no user-space P2PDMA: no $NRP_GPU_PCI/p2pmem/allocate (user mappings of P2P memory and FOLL_PCI_P2PDMA came in 6.2)"
}

# Whether the running kernel is release $1.$2 or later.
nrp_kernel_at_least() {
	local rel maj min
	rel=$(uname -r)
	maj=${rel%%.*}
	min=${rel#*.}
	min=${min%%[!0-9]*}
	[[ $maj =~ ^[0-9]+$ && $min =~ ^[0-9]+$ ]] ||
		nrp_fail "cannot read a kernel release from '$rel'"
	[ "$maj" -gt "$1" ] || { [ "$maj" = "$1" ] && [ "$min" -ge "$2" ]; }
}

# Whether this kernel lets user space map P2P memory and do O_DIRECT from
# it (6.2 and later). Asked of the kernel's symbols, not of the sysfs file:
# p2pmem/allocate only appears once a driver adds its BAR as P2P memory
# (pci_p2pdma_add_resource), so before nrp_gpu_setup it is missing on
# every kernel.
nrp_p2p_user_capable() {
	grep -qw p2pmem_alloc_mmap /proc/kallsyms
}

# Bind the GPU stand-in for a checkpoint through a head disk: written from
# user space (p2p-checkpoint --user, the published pool: the stand-in keeps
# 16 MiB of its BAR) where the kernel allows it, else by the in-kernel
# mover. Leaves NRP_CKPT_USER 1 or empty.
nrp_gpu_setup_ckpt() {
	NRP_CKPT_USER=
	if ! nrp_p2p_user_capable; then
		nrp_gpu_setup
		return
	fi
	NRP_CKPT_USER=1
	NRP_GPU_ARGS=window_mb=16 nrp_gpu_setup
	[ -e "$NRP_GPU_PCI/p2pmem/allocate" ] ||
		nrp_fail "Linux $(uname -r) maps P2P memory for user space, but $NRP_GPU_PCI has no p2pmem/allocate after the stand-in was bound"
}

# The user-space P2P fixture: nrp_p2p_setup (same arguments) with the GPU
# stand-in keeping only 16 MiB for itself, so that the rest of its BAR is
# the published pool that p2p-checkpoint --user maps.
nrp_p2p_user_setup() {
	NRP_GPU_ARGS="window_mb=16" NRP_P2P_USER=1 nrp_p2p_setup "$@"
	NRP_P2PMEM_AVAIL=$(cat "$NRP_GPU_PCI/p2pmem/available")
}

# Whether head disk $1 (nvmeXnY) is marked as taking P2PDMA pages, as our
# debugfs "heads" says: 1, 0, or "none" when it is not a head of ours.
nrp_head_p2p() {
	[ -r "$NRP_DEBUGFS/heads" ] || { echo none; return; }
	awk -v h="$1" '$1 == h { p = $6 } END { print (p == "" ? "none" : p) }' \
		"$NRP_DEBUGFS/heads"
}

# Wait up to $3 seconds (default 30) until head $1's mark is $2 (1 or 0):
# it follows the namespace scan and other controllers' arrivals.
# The PCI address of the first QEMU NVMe device (class 010802), into
# NRP_NVME_BDF; the test skips without one (run-all.sh's topology boot has
# one, with a CMB).
nrp_qemu_nvme() {
	local d
	NRP_NVME_BDF=
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/class")" = 0x010802 ] && { NRP_NVME_BDF=$(basename "$d"); return 0; }
	done
	nrp_skip "no QEMU NVMe device (PCI class 010802): run-all.sh's topology boot has one"
}

nrp_wait_head_p2p() {
	local i
	for ((i = 0; i < ${3:-30} * 5; i++)); do
		[ "$(nrp_head_p2p "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# The whole P2P fixture: soft RDMA, a target with $3 namespaces (default 1)
# on RAM disks of $1 MiB each, the GPU stand-in, and our module connected,
# with allow_soft_p2p=$2 (default 1). Leaves NRP_CTRL and NRP_NS (namespace
# 1; nrp_p2p_ns for the others): with multipath the head disk, once it is
# marked as taking P2P pages if the controller can carry them.
nrp_p2p_setup() {
	local mib=$1 allow=${2:-1} nns=${3:-1} cfs i
	nrp_p2p_require
	nrp_gpu_setup
	[ -z "${NRP_P2P_USER:-}" ] || nrp_p2p_user_require
	nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
	nrp_must modprobe brd rd_nr="$nns" rd_size=$((mib * 1024))
	nrp_cleanup_push "modprobe -r brd"
	nrp_nvmet_setup /dev/ram0
	cfs=/sys/kernel/config/nvmet/subsystems/$NRP_SUBNQN/namespaces
	for ((i = 2; i <= nns; i++)); do
		mkdir "$cfs/$i" || nrp_fail "cannot create namespace $i"
		nrp_cleanup_push "rmdir $cfs/$i"
		echo "/dev/ram$((i - 1))" >"$cfs/$i/device_path"
		echo 1 >"$cfs/$i/enable" || nrp_fail "cannot enable namespace $i"
		nrp_cleanup_push "echo 0 >$cfs/$i/enable"
	done
	# NRP_P2P_MODPARAMS: further module parameters of a test
	# shellcheck disable=SC2086 # words of their own
	nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p="$allow" ${NRP_P2P_MODPARAMS:-}
	# a test's own target set-up and connect options (test_p2p_auth.sh)
	NRP_P2P_CONNECT=()
	! declare -F nrp_p2p_pre_connect >/dev/null || nrp_p2p_pre_connect
	nrp_connect ${NRP_P2P_CONNECT[@]+"${NRP_P2P_CONNECT[@]}"}
	nrp_ctrl_is_ours "$NRP_CTRL" || nrp_fail "$NRP_CTRL is not ours"
	NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
	[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = "$allow" ] ||
		nrp_fail "p2p_capable is $(nrp_stat "$NRP_CTRL" p2p_capable) with allow_soft_p2p=$allow"
	case $NRP_NS in
	/dev/"$NRP_CTRL"n*) ;;
	*)	nrp_wait_head_p2p "$(basename "$NRP_NS")" "$allow" ||
			nrp_fail "head $NRP_NS: P2P mark $(nrp_head_p2p "$(basename "$NRP_NS")"), expected $allow (allow_soft_p2p=$allow)" ;;
	esac
}

# The block device of namespace $1 of NRP_CTRL: its own disk, or with
# multipath the head disk of its subsystem.
nrp_p2p_ns() {
	local n i d
	for i in $(seq 50); do
		for d in /sys/class/nvme-subsystem/*; do
			[ -e "$d/$NRP_CTRL" ] || continue
			for n in "$d"/nvme*n* /sys/class/nvme/"$NRP_CTRL"/nvme*n*; do
				[ -e "$n/nsid" ] && [ "$(cat "$n/nsid")" = "$1" ] &&
					[ -b "/dev/$(basename "$n")" ] &&
					{ echo "/dev/$(basename "$n")"; return 0; }
			done
		done
		sleep 0.2
	done
	return 1
}

# Counter $1 grew by exactly $2 since nrp_snap ($3: what it means).
nrp_p2p_expect() {
	local got
	got=$(nrp_delta "$1")
	[ "$got" = "$2" ] || nrp_fail "${3:-$1}: $1 grew by $got, expected $2"
}

# One checkpoint and restore through p2p-checkpoint; arguments go to the
# tool, its output is left in NRP_CKPT_OUT. Fails unless verified.
nrp_p2p_ckpt() {
	NRP_CKPT_OUT=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" \
		--stats none "$@" 2>&1) ||
		nrp_fail "p2p-checkpoint $* failed: $(echo "$NRP_CKPT_OUT" | tail -n 4)"
	echo "$NRP_CKPT_OUT" | grep -q "^checkpoint verified" ||
		nrp_fail "p2p-checkpoint $*: no verification line"
	echo "$NRP_CKPT_OUT" | grep -E "^(checkpoint verified|write |read )" | sed 's/^/  /'
}

# A checkpoint of $1 bytes that must not bounce: the P2P byte counter
# grows by exactly the payload written and read, the host one by zero,
# and every data command maps P2P segments. The rest goes to the tool.
nrp_p2p_ckpt_exact() {
	local bytes=$1 bios segs data
	shift
	nrp_snap
	nrp_p2p_ckpt --size "$bytes" "$@"
	nrp_p2p_expect p2p_bytes_mapped $((2 * bytes)) "checkpoint of $bytes bytes"
	nrp_p2p_expect host_bytes_mapped 0 "checkpoint of $bytes bytes (nothing bounces)"
	nrp_p2p_expect p2p_unreachable 0
	nrp_p2p_expect recoveries 0
	bios=$(echo "$NRP_CKPT_OUT" | awk '/^(write|read) .* bios/ {
		for (i = 1; i < NF; i++) if ($(i + 1) ~ /^bios/) n += $i } END { print n + 0 }')
	# commands with data, whichever way it was described
	data=$(($(nrp_delta frwr_registrations) + $(nrp_delta inline_writes) +
		$(nrp_delta global_rkey_mappings)))
	segs=$(nrp_delta p2p_segments_mapped)
	# a bio may be split into several commands, never merged with another
	[ "$data" -ge "$bios" ] || nrp_fail "$bios bios but only $data data commands"
	[ "$segs" -ge "$data" ] || nrp_fail "$data data commands but $segs P2P segments"
	echo "  counters: p2p_bytes_mapped +$((2 * bytes)), host_bytes_mapped +0, $data data commands, $segs P2P segments"
}

# The checkpoint the multipath tests cut a path under: MIB MiB to the head
# $NRP_NS in 1 MiB requests 16 deep, read back and compared; from mapped
# P2P memory with O_DIRECT through io_uring where the kernel has
# user-space P2PDMA (NRP_CKPT_USER, nrp_gpu_setup_ckpt), else by the GPU
# stand-in's in-kernel mover. It runs in the background, its output in
# LOG; NRP_CKPT_PID is its pid, killed at cleanup.
nrp_ckpt_start() { # MIB LOG
	local src=(--gpu "$NRP_GPU")
	[ -n "${NRP_CKPT_USER:-}" ] && src=(--user --io uring)
	"$NRP_P2P_TOOL" "${src[@]}" --dev "$NRP_NS" --size "$1M" --chunk 1M \
		--qd 16 --stats none >"$2" 2>&1 &
	nrp_ckpt_started "$2"
}

# Take the background job just started (a checkpoint, or fio) as the
# checkpoint of nrp_ckpt_wait and nrp_ckpt_end, its output in LOG.
nrp_ckpt_started() { # LOG
	NRP_CKPT_PID=$! NRP_CKPT_LOG=$1
	nrp_cleanup_push "kill $NRP_CKPT_PID"
}

# Wait, for at most TICKS tenths of a second, until the byte count that
# COMMAND... prints has grown BYTES past BASE; a checkpoint that ended
# first fails the test, unless WHAT is empty (then the caller checks).
nrp_ckpt_wait() { # BASE BYTES TICKS WHAT COMMAND...
	local base=$1 bytes=$2 ticks=$3 what=$4
	shift 4
	for _ in $(seq "$ticks"); do
		[ $(($("$@") - base)) -ge "$bytes" ] && break
		nrp_running "$NRP_CKPT_PID" || break
		sleep 0.1
	done
	[ -z "$what" ] || nrp_running "$NRP_CKPT_PID" ||
		nrp_fail "the checkpoint ended before $what: $(tail -n 3 "$NRP_CKPT_LOG")"
}

# The checkpoint ended well across WHAT (a path cut, an ANA change):
# exit 0 and p2p-checkpoint's verification line; its summary printed.
nrp_ckpt_end() { # WHAT
	wait "$NRP_CKPT_PID" ||
		{ tail -n 20 "$NRP_CKPT_LOG"; nrp_fail "the checkpoint failed across $1"; }
	grep -q "^checkpoint verified" "$NRP_CKPT_LOG" ||
		{ tail -n 20 "$NRP_CKPT_LOG"; nrp_fail "no verification line"; }
	grep -E "^(checkpoint verified|write |read )" "$NRP_CKPT_LOG" | sed 's/^/  /'
}

# The kernel's answer for disk $1: 0 when the P2P submitter took it for a
# 1 MiB checkpoint, 3 when it refused it (its queue lacks P2PDMA).
nrp_p2p_submitter() {
	local out rc
	out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$1" --size 1M --stats none 2>&1)
	rc=$?
	case $rc in
	0|3) echo "$rc" ;;
	*) nrp_fail "p2p-checkpoint to $1: exit $rc: $out" ;;
	esac
}

# p2p-checkpoint --user with arguments $2...; $1 is what must happen:
# "served" (exit 0 and verified) or "refused" (exit 3, P2P pages not
# pinned for the device) or "refused-align" (exit 5, O_DIRECT alignment).
# The output is left in NRP_UCKPT_OUT, the exit status in NRP_UCKPT_RC,
# the phases' counters in NRP_UCKPT_{P2P,HOST}_{W,F,R}.
nrp_p2p_user() {
	local want=$1 rc
	shift
	NRP_UCKPT_OUT=$("$NRP_P2P_TOOL" --user "$@" 2>&1)
	rc=$?
	NRP_UCKPT_RC=$rc
	case $want/$rc in
	served/0)
		echo "$NRP_UCKPT_OUT" | grep -q "^checkpoint verified" ||
			nrp_fail "p2p-checkpoint --user $*: no verification line" ;;
	refused/3)
		echo "$NRP_UCKPT_OUT" | grep -q "refused: .*would not pin P2PDMA pages" ||
			nrp_fail "p2p-checkpoint --user $*: exit 3 without saying why: $NRP_UCKPT_OUT" ;;
	refused-align/5)
		echo "$NRP_UCKPT_OUT" | grep -q "refused: O_DIRECT" ||
			nrp_fail "p2p-checkpoint --user $*: exit 5 without saying why: $NRP_UCKPT_OUT" ;;
	*)
		nrp_fail "p2p-checkpoint --user $*: expected $want, exit $rc: $(echo "$NRP_UCKPT_OUT" | tail -n 6)" ;;
	esac
	_nrp_uckpt_phase W write
	_nrp_uckpt_phase F fsync
	_nrp_uckpt_phase R read
}

# The P2P bytes mapped by the last nrp_p2p_user (written, synced, read),
# NRP_UCKPT_P2P_*, against EXPECTED, the payload: exactly, unless
# recoveries of NRP_CTRL (an I/O timeout, a reconnect; counted since the
# last nrp_snap) fell inside the checkpoint. The requests a recovery ends
# are sent again and mapped again: the same P2P pages twice, never host
# memory. Then the excess must be no more than INFLIGHT bytes (the
# submitter's depth times its request size) per recovery. Seen once in
# CI, on the debug kernel: 14 MiB over a 64 MiB file written 16 deep in
# 1 MiB requests; at 0.5 MiB/s a queue's 16 MiB outlasts the
# 30 s I/O timeout (inferred: that run's kernel log was lost; the data
# verified). Leaves the note for the pass line in NRP_UCKPT_REMAP.
nrp_uckpt_p2p_check() { # EXPECTED INFLIGHT WHAT
	local want=$1 inflight=$2 what=$3 p2p rec
	p2p=$((NRP_UCKPT_P2P_W + NRP_UCKPT_P2P_F + NRP_UCKPT_P2P_R))
	rec=$(nrp_delta recoveries)
	NRP_UCKPT_REMAP=
	[ "$p2p" = "$want" ] && return 0
	[ "$rec" -gt 0 ] && [ "$p2p" -gt "$want" ] && [ $((p2p - want)) -le $((rec * inflight)) ] && {
		NRP_UCKPT_REMAP="$((p2p - want)) bytes mapped again after $rec recoveries, timeouts +$(nrp_delta timeouts)"
		echo "  $what: $rec recoveries during the checkpoint: $(nrp_dmesg_since | grep -m2 ' timeout\|error recovery' | sed 's/^\[[^]]*\] //' | paste -sd ';')"
		return 0
	}
	nrp_fail "$what: p2p_bytes_mapped +$p2p, expected exactly $want (the payload);" \
		"phases write $NRP_UCKPT_P2P_W fsync $NRP_UCKPT_P2P_F read $NRP_UCKPT_P2P_R;" \
		"recoveries +$rec (at most $inflight bytes in flight each), timeouts +$(nrp_delta timeouts)," \
		"errors +$(nrp_delta errors), queue_full_requeues +$(nrp_delta queue_full_requeues);" \
		"$(nrp_dmesg_since | grep -m4 -i 'timeout\|recovery\|reset\|failed\|nvmet')"
}

# The most bytes p2p-checkpoint's arguments keep in flight: one request
# of --chunk (1 MiB unless given) for pwrite/pread, --qd of them (8 unless
# given) for io_uring.
nrp_ckpt_inflight() { # ARGS...
	local qd=1 uqd=8 chunk=$((1 << 20))
	while [ $# -gt 0 ]; do
		case $1 in
		--io) [ "$2" = uring ] && qd=$uqd; shift ;;
		--qd) uqd=$2; [ "$qd" = 1 ] || qd=$2; shift ;;
		--chunk) chunk=$(numfmt --from=iec "$2"); shift ;;
		esac
		shift
	done
	echo $((qd * chunk))
}

_nrp_uckpt_phase() { # VAR-SUFFIX PHASE
	local line
	line=$(echo "$NRP_UCKPT_OUT" | awk -v p="$2" '$1 == "phase" && $2 == p')
	printf -v "NRP_UCKPT_P2P_$1" '%s' "$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "p2p_bytes_mapped") print $(i + 1) }')"
	printf -v "NRP_UCKPT_HOST_$1" '%s' "$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "host_bytes_mapped") print $(i + 1) }')"
}

# The user-space tests' turn from our side to the in-tree one: our
# controller ended live with no P2P request unreachable; then, except
# under the debug kernel, the in-tree nvme_rdma connects to the same
# target. Under the debug kernel the test passes here: the checkers watch
# our module, and upstream's code refusing the same requests runs on the
# kernels without them (stock 7.3 in the check tier, every P2PDMA kernel
# in the full tier).
nrp_p2p_user_then_intree() {
	[ "$(nrp_stat "$NRP_CTRL" p2p_unreachable)" = 0 ] ||
		nrp_fail "p2p_unreachable is $(nrp_stat "$NRP_CTRL" p2p_unreachable)"
	[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] || nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL")"
	case $(uname -r) in
	*-nrp-debug*)
		echo "in-tree side by side: not under the debug kernel (stock 7.3 and the full tier run it)"
		nrp_pass ;;
	esac
	echo "in-tree nvme_rdma on the same target:"
	nrp_p2p_intree_connect
	echo "  $NRP_CTRL: $NRP_NS, transport rdma (in-tree)"
}

# Connect the in-tree nvme_rdma (transport "rdma") to the same target,
# for the side-by-side; NRP_CTRL and NRP_NS then name its controller
# and disk. Our controllers must be gone first (one host, one subsystem).
nrp_p2p_intree_connect() {
	nrp_disconnect_all
	nrp_mod_loaded nvme_rdma || {
		nrp_must modprobe --ignore-install nvme-rdma
		nrp_cleanup_push "modprobe -r nvme_rdma"
	}
	nrp_must nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN"
	nrp_cleanup_push nrp_disconnect_all
	NRP_CTRL=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "no in-tree controller for $NRP_SUBNQN"
	nrp_ctrl_is_ours "$NRP_CTRL" && nrp_fail "$NRP_CTRL is ours, not the in-tree nvme_rdma's"
	[ "$(cat "/sys/class/nvme/$NRP_CTRL/transport")" = rdma ] ||
		nrp_fail "$NRP_CTRL's transport is $(cat "/sys/class/nvme/$NRP_CTRL/transport")"
	NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
}

# One row of a side-by-side table, appended to NRP_SIDE.
nrp_side_row() { NRP_SIDE+=$(printf '  %-44s %-40s %s' "$1" "$2" "$3")$'\n'; }
