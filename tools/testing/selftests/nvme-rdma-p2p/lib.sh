# SPDX-License-Identifier: GPL-2.0
# Helpers for the in-guest tests: results, the module under test, and the
# fixtures (soft RDMA on a veth pair, a kernel nvmet-rdma target).
#
# Each test sources this file, sets up what it needs, and registers its
# teardown with nrp_cleanup_push, so a failing test still leaves the guest
# clean for the next one.
set -u

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

NRP_MOD=nvme_rdma_p2p
# Addresses live on a veth pair inside a guest that has no NIC at all.
NRP_TGT_IP4=${NRP_TGT_IP4:-10.99.0.1}
NRP_HOST_IP4=${NRP_HOST_IP4:-10.99.0.2}
NRP_TGT_IP6=${NRP_TGT_IP6:-fd99::1}
NRP_HOST_IP6=${NRP_HOST_IP6:-fd99::2}
NRP_PORT=${NRP_PORT:-4420}
NRP_SUBNQN=${NRP_SUBNQN:-nqn.2026-11.io.nvme-rdma-p2p:test}
NRP_HOSTNQN=${NRP_HOSTNQN:-nqn.2026-11.io.nvme-rdma-p2p:host}
# An alternate transport name, so that the in-tree nvme_rdma keeps "rdma".
NRP_TRANSPORT=${NRP_TRANSPORT:-rdma_p2p}
# How much slower than a plain kernel on the fastest host this one moves
# data: a kernel with kmemleak is the debug guest (KASAN, lockdep), where
# 1 MiB commands over rxe take seconds each under TCG; and the host may be
# up to about three times slower than the fastest of its kind
# (NRP_HOST_SLOW, measured by the runner: tools/vm/calibrate.sh). Waits
# for I/O to flow, and the time bounds the tests assert, scale by it.
NRP_SLOW=1
[ -e /sys/kernel/debug/kmemleak ] && NRP_SLOW=6
case ${NRP_HOST_SLOW:-1} in
[1-9]) NRP_SLOW=$((NRP_SLOW * ${NRP_HOST_SLOW:-1})) ;;
esac

_nrp_cleanups=()
nrp_cleanup_push() { _nrp_cleanups+=("$*"); }
# A teardown that fails says so (run_tests.sh then finds what it left);
# one that undoes what the test already undid (an rmdir of a namespace the
# test removed, a module it unloaded) fails harmlessly, so the message is
# a report, not a verdict.
_nrp_run_cleanups() {
	local i out rc
	for ((i = ${#_nrp_cleanups[@]} - 1; i >= 0; i--)); do
		# a background job that ended on its own is the normal case
		case ${_nrp_cleanups[$i]} in
		"kill "*) eval "${_nrp_cleanups[$i]}" >/dev/null 2>&1; continue ;;
		esac
		out=$(eval "${_nrp_cleanups[$i]}" 2>&1)
		rc=$?
		[ "$rc" = 0 ] ||
			echo "cleanup '${_nrp_cleanups[$i]}' exited $rc${out:+: $(echo "$out" | tail -n 2 | paste -sd' ' -)}"
	done
	_nrp_cleanups=()
}
trap _nrp_run_cleanups EXIT

nrp_log() { echo "$*"; }
nrp_fail() { echo "FAIL: $*"; exit $KSFT_FAIL; }
nrp_skip() { echo "SKIP: $*"; exit $KSFT_SKIP; }
nrp_pass() { exit $KSFT_PASS; }

# The waits below poll counters while fio runs. Under TCG on a busy host
# every process they started (awk, cat, sleep) costs tenths of a second,
# enough to miss what they wait for, so they read with bash builtins and
# nap on a pipe nobody writes to instead of running sleep.
exec {_nrp_nap_fd}<> <(:)
nrp_nap() { read -r -t "$1" -u "$_nrp_nap_fd" _; return 0; }

# Whether process $1 still runs. Not kill -0: that succeeds on a zombie,
# and bash does not always reap a background child while a loop runs only
# builtins (a CI run waited 150 s on an rdma that had ended at once, and
# /proc called it Z). Builtins only: /proc/PID/stat is "PID (comm) STATE ...".
nrp_running() {
	local st
	{ read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# Run a command; fail the test with its output when it fails.
nrp_must() {
	local out
	out=$("$@" 2>&1) || nrp_fail "'$*' failed: $out"
	[ -z "$out" ] || echo "$out"
}

# dmesg lines logged since nrp_dmesg_mark.
# A line written to the log marks the place: once the ring buffer is full
# (after test_fuzz_options.sh, say) counting lines no longer finds it.
nrp_dmesg_mark() {
	_nrp_dmesg_lines=$(dmesg | wc -l)
	_nrp_dmesg_tag="nrp-dmesg-mark-$$-$RANDOM"
	echo "$_nrp_dmesg_tag" 2>/dev/null >/dev/kmsg || _nrp_dmesg_tag=
}
nrp_dmesg_since() {
	if [ -n "${_nrp_dmesg_tag:-}" ] && dmesg | grep -q "$_nrp_dmesg_tag"; then
		dmesg | sed -n "/$_nrp_dmesg_tag/,\$p" | tail -n +2
	else
		dmesg | tail -n +"$((${_nrp_dmesg_lines:-0} + 1))"
	fi
}

# A test's kernel log begins with the test: a report that an earlier test
# of the same boot left behind is that test's failure, not every later
# one's (a 6.12 WARN in fuzz_options failed five tests after it).
nrp_dmesg_mark

# Wait up to $2 seconds for a kernel log line since nrp_dmesg_mark that
# matches $1 (grep); false when none came.
nrp_dmesg_wait() {
	local pat=$1 secs=$2 i
	for ((i = 0; i < secs * 10; i++)); do
		nrp_dmesg_since | grep -q "$pat" && return 0
		sleep 0.1
	done
	return 1
}

nrp_mod_loaded() { [ -d "/sys/module/$1" ] && grep -q "^$1 " /proc/modules; }

# The in-tree host transports: the fabrics core loads nvme-<transport>
# for any transport=NAME written to /dev/nvme-fabrics. run_tests.sh,
# which does not source this file, counts one the suite did not start
# with as a test's residue (its intree_transports, the same list).
NRP_INTREE_TRANSPORTS="nvme_rdma nvme_tcp nvme_fc nvme_loop"

# Unload module $1 and, first, every module that holds it (depth first);
# a busy one stays, and so does what it holds.
nrp_mod_unload_tree() {
	local h
	for h in /sys/module/"$1"/holders/*; do
		[ -e "$h" ] && nrp_mod_unload_tree "${h##*/}"
	done
	nrp_mod_loaded "$1" && modprobe -r "$1" 2>/dev/null
	return 0
}

# The CPUs of a cpulist ("0-3,8"), one per line; anything else (an empty
# list, "(null)") gives none.
nrp_cpulist() {
	local part
	for part in $(tr ',' ' ' <<<"$1"); do
		if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
			seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
		elif [[ $part =~ ^[0-9]+$ ]]; then
			echo "$part"
		fi
	done
}

# The guest's CPUs, online and possible, in NRP_ONLINE_CPUS and
# NRP_POSSIBLE_CPUS, and in NRP_USABLE_CPUS the online ones not isolated
# (isolcpus=, nohz_full=): what the driver counts I/O queues by. A test of
# the host's shape must run in the shape it was booted for: when run-guest.sh asked for CPUs (--smp N[,maxcpus=M],
# --online K: NRP_SMP, NRP_ONLINE) that the kernel did not make possible
# or online, fail rather than test a smaller shape. (6.12 under TCG makes
# none of QEMU's hotpluggable CPUs possible: --smp M --online N does.)
nrp_guest_cpus() {
	local want_p want_o
	nrp_count_cpus "$@"
	if grep -qwE 'isolcpus=[^ ]+|nohz_full=[^ ]+' /proc/cmdline &&
		[ "$NRP_USABLE_CPUS" = "$NRP_ONLINE_CPUS" ]; then
		nrp_fail "booted with $(grep -owE '(isolcpus|nohz_full)=[^ ]+' /proc/cmdline | xargs), the kernel isolated no CPU (CONFIG_CPU_ISOLATION?)"
	fi
	[ -n "${NRP_SMP:-}" ] || return 0
	want_o=${NRP_SMP%%,*}
	want_p=$want_o
	case $NRP_SMP in *maxcpus=*) want_p=${NRP_SMP##*maxcpus=}; want_p=${want_p%%,*} ;; esac
	[ -z "${NRP_ONLINE:-}" ] || want_o=$NRP_ONLINE
	[[ $want_o =~ ^[0-9]+$ && $want_p =~ ^[0-9]+$ ]] || return 0
	[ "$NRP_POSSIBLE_CPUS" = "$want_p" ] ||
		nrp_fail "booted for $want_p possible CPUs (-smp $NRP_SMP), the kernel made $NRP_POSSIBLE_CPUS possible"
	[ "$NRP_ONLINE_CPUS" = "$want_o" ] ||
		nrp_fail "booted for $want_o online CPUs, $NRP_ONLINE_CPUS are online"
}

# NRP_ONLINE_CPUS, NRP_POSSIBLE_CPUS and NRP_USABLE_CPUS as they are now
# (nrp_guest_cpus without its checks of the boot: for a test that takes
# CPUs offline or brings them online), printed with $1 as a note.
nrp_count_cpus() {
	local online
	# not nproc: it counts the CPUs this task may run on, and isolcpus=
	# takes the isolated ones out of that
	online=$(nrp_cpulist "$(cat /sys/devices/system/cpu/online)" | sort)
	NRP_ONLINE_CPUS=$(wc -l <<<"$online")
	NRP_POSSIBLE_CPUS=$(($(sed 's/.*[-,]//' /sys/devices/system/cpu/possible) + 1))
	NRP_USABLE_CPUS=$(comm -23 <(echo "$online") \
		<(for f in isolated nohz_full; do
			nrp_cpulist "$(cat /sys/devices/system/cpu/$f 2>/dev/null)"
		done | sort -u) | wc -l)
	echo "guest: $NRP_ONLINE_CPUS online CPUs, $NRP_POSSIBLE_CPUS possible, $NRP_USABLE_CPUS online not isolated${1:+; $1}"
}

# Reload nvme_core with multipath=$1 (Y or N) unless it already has it;
# a later test gets the default back. A test run as NAME@mpn
# (run_tests.sh) runs with N whatever the boot says; one that asks for Y
# itself cannot.
nrp_nvme_core_multipath() {
	local want=$1 cur m
	[ -z "${NRP_CORE_MULTIPATH:-}" ] || [ "$NRP_CORE_MULTIPATH" = "$want" ] ||
		nrp_fail "this test needs nvme_core multipath=$want, it cannot run with multipath=$NRP_CORE_MULTIPATH (@mpn)"
	cur=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)
	[ "$cur" = "$want" ] && return 0
	if [ -n "$cur" ]; then
		# A controller the last test deleted may still be being freed
		# (its references on the modules go last): wait for that, up
		# to 30 s, rather than fail on the first busy module.
		# Every module that holds nvme_core goes first, whoever loaded
		# it: the fabrics layer loads nvme-<transport> on demand, so an
		# earlier test's "transport=fc" leaves nvme_fc behind.
		local end=$((SECONDS + 30))
		while :; do
			nrp_mod_unload_tree nvme_core
			nrp_mod_loaded nvme_core || break
			((SECONDS < end)) ||
				nrp_fail "nvme_core is in use, cannot reload it with multipath=$want: $(lsmod | grep -E '^(nvme|t10_pi)' | tr -s ' ' | tr '\n' ';')"
			sleep 0.5
		done
	fi
	nrp_must modprobe nvme_core multipath="$want"
	nrp_cleanup_push "modprobe -r nvme_fabrics nvme_core"
}

# Load the module under test with the given parameters.
nrp_load() {
	nrp_must modprobe nvme-rdma-p2p "$@"
	nrp_cleanup_push "modprobe -r nvme-rdma-p2p"
}

# Kernel-side write to nvme-fabrics, the way nvme-cli does it; prints the
# controller line on success, returns the errno text on failure.
nrp_fabrics_write() {
	local opts=$1 out
	[ -c /dev/nvme-fabrics ] || { echo "/dev/nvme-fabrics missing"; return 1; }
	exec 7<>/dev/nvme-fabrics || return 1
	if ! printf '%s' "$opts" >&7 2>/tmp/nrp-fabrics.err; then
		exec 7>&-
		cat /tmp/nrp-fabrics.err
		return 1
	fi
	out=$(head -n1 <&7)
	exec 7>&-
	echo "$out"
}

# Soft RDMA over a veth pair: nrp-t (target side) and nrp-h (host side).
# $1: rxe (default) or siw.
nrp_rdma_setup() {
	local type=${1:-rxe}
	modprobe veth || nrp_skip "no veth driver"
	modprobe "rdma_$type" 2>/dev/null || modprobe "$type" 2>/dev/null ||
		nrp_skip "no $type driver in this kernel"
	ip link add nrp-t type veth peer name nrp-h || nrp_fail "cannot create veth pair"
	nrp_cleanup_push "ip link del nrp-t"
	ip addr add "$NRP_TGT_IP4/24" dev nrp-t
	ip addr add "$NRP_HOST_IP4/24" dev nrp-h
	# the demo's lean kernel has no IPv6 (the suite's kernels do, for
	# test_connect's ipv6 family): no RTNETLINK errors in its output
	if [ -d /proc/sys/net/ipv6 ]; then
		ip -6 addr add "$NRP_TGT_IP6/64" dev nrp-t nodad
		ip -6 addr add "$NRP_HOST_IP6/64" dev nrp-h nodad
	fi
	ip link set nrp-t up
	ip link set nrp-h up
	nrp_rdma_link "$type" nrp-t "nrp_${type}_t"
	nrp_rdma_link "$type" nrp-h "nrp_${type}_h"
}

# A soft RDMA device $3 of type $1 on the existing netdev $2.
nrp_rdma_link() {
	rdma link add "$3" type "$1" netdev "$2" ||
		nrp_fail "rdma link add $1 on $2 failed"
	nrp_cleanup_push "nrp_rdma_link_del $3"
}

# Delete soft RDMA device $1 unless it is gone already (a target port's
# teardown may have taken it first: nrp_drop_listener).
nrp_rdma_link_del() {
	rdma link show "$1/1" >/dev/null 2>&1 || return 0
	rdma link delete "$1"
}

# Before a target port is unlinked at teardown: delete the soft RDMA device
# that carries address $1, so that nvmet_rdma's listener on it goes with
# the device (rdma_cm destroys a listener that returns 1 on
# DEVICE_REMOVAL) and the unlink finds no listener left to destroy.
# Why: unlinking a port's last subsystem destroys the listener's rdma_cm
# id, taking its handler_mutex under nvmet_config_sem; an I/O queue
# Connect that nvmet_rdma runs from its ESTABLISHED event takes
# nvmet_config_sem under another id's handler_mutex. One lock class, two
# ids: lockdep reports a circular dependency (6.1 and 6.12) and then turns
# itself off for the rest of the boot, blind to anything of ours.
nrp_drop_listener() {
	local nd l
	nd=$(ip -o addr show to "$1" 2>/dev/null | awk '{ print $2; exit }')
	[ -n "$nd" ] || return 0
	for l in $(rdma link show 2>/dev/null | awk -v n="$nd" '
		{ for (i = 1; i < NF; i++) if ($i == "netdev" && $(i + 1) == n) {
			split($2, a, "/"); print a[1] } }'); do
		nrp_rdma_link_del "$l" || return 1
	done
}

# A kernel NVMe target exporting one namespace over RDMA.
# $1: backing block device (default: a fresh 256 MiB RAM disk)
# $2: address family ipv4 (default) or ipv6
nrp_nvmet_setup() {
	local dev=${1:-} fam=${2:-ipv4} cfs=/sys/kernel/config/nvmet addr
	if [ -z "$dev" ]; then
		nrp_backing_dev ram 256
		dev=$NRP_DEV
	fi
	modprobe nvmet-rdma || nrp_fail "cannot load nvmet-rdma"
	nrp_cleanup_push "modprobe -r nvmet-rdma nvmet"
	[ -d $cfs ] || mount -t configfs configfs /sys/kernel/config
	mkdir "$cfs/subsystems/$NRP_SUBNQN" || nrp_fail "cannot create subsystem"
	nrp_cleanup_push "rmdir $cfs/subsystems/$NRP_SUBNQN"
	echo 1 >"$cfs/subsystems/$NRP_SUBNQN/attr_allow_any_host"
	mkdir "$cfs/subsystems/$NRP_SUBNQN/namespaces/1"
	nrp_cleanup_push "rmdir $cfs/subsystems/$NRP_SUBNQN/namespaces/1"
	echo "$dev" >"$cfs/subsystems/$NRP_SUBNQN/namespaces/1/device_path"
	echo 1 >"$cfs/subsystems/$NRP_SUBNQN/namespaces/1/enable" ||
		nrp_fail "cannot enable namespace on $dev"
	nrp_cleanup_push "echo 0 >$cfs/subsystems/$NRP_SUBNQN/namespaces/1/enable"
	addr=$NRP_TGT_IP4
	[ "$fam" = ipv6 ] && addr=$NRP_TGT_IP6
	mkdir "$cfs/ports/1"
	nrp_cleanup_push "rmdir $cfs/ports/1"
	echo rdma >"$cfs/ports/1/addr_trtype"
	echo "$fam" >"$cfs/ports/1/addr_adrfam"
	echo "$addr" >"$cfs/ports/1/addr_traddr"
	echo "$NRP_PORT" >"$cfs/ports/1/addr_trsvcid"
	ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/" ||
		nrp_fail "cannot enable nvmet port $addr:$NRP_PORT"
	nrp_cleanup_push "rm $cfs/ports/1/subsystems/$NRP_SUBNQN"
	nrp_cleanup_push "nrp_drop_listener $addr"
}

# $2 nvmet subsystems named $1-0, $1-1, ..., each open to any host with
# one namespace on a RAM disk of its own (brd, $3 MiB each); no port.
nrp_ram_subsystems() { # NQN-PREFIX COUNT MIB
	local cfs=/sys/kernel/config/nvmet s d
	modprobe brd rd_nr="$2" rd_size=$(($3 * 1024)) || nrp_fail "cannot create $2 RAM disks"
	nrp_cleanup_push "modprobe -r brd"
	modprobe nvmet-rdma || nrp_fail "cannot load nvmet-rdma"
	nrp_cleanup_push "modprobe -r nvmet-rdma nvmet"
	# as nrp_nvmet_setup: in a boot where no test before mounted it
	[ -d $cfs ] || mount -t configfs configfs /sys/kernel/config || nrp_fail "cannot mount configfs"
	for ((s = 0; s < $2; s++)); do
		d=$cfs/subsystems/$1-$s
		mkdir "$d" || nrp_fail "cannot create subsystem $s"
		nrp_cleanup_push "rmdir $d"
		echo 1 >"$d/attr_allow_any_host"
		mkdir "$d/namespaces/1"
		nrp_cleanup_push "rmdir $d/namespaces/1"
		echo "/dev/ram$s" >"$d/namespaces/1/device_path"
		echo 1 >"$d/namespaces/1/enable" || nrp_fail "cannot enable namespace $s"
		nrp_cleanup_push "echo 0 >$d/namespaces/1/enable"
	done
}

# A backing block device for a target namespace, left in NRP_DEV. (Not
# printed: a function that registers cleanups must not run in $(...),
# whose subshell would lose them.)
# $1: ram (brd RAM disk), null (memory-backed null_blk) or loop (a file
# on tmpfs behind a loop device); $2: size in MiB.
nrp_backing_dev() {
	local kind=$1 mib=${2:-256} d f
	case $kind in
	ram)
		modprobe brd rd_nr=1 rd_size=$((mib * 1024)) || nrp_fail "cannot create RAM disk"
		nrp_cleanup_push "modprobe -r brd"
		NRP_DEV=/dev/ram0 ;;
	null)
		# configfs may be a module that nothing has loaded yet
		modprobe configfs 2>/dev/null
		mountpoint -q /sys/kernel/config ||
			mount -t configfs configfs /sys/kernel/config
		modprobe null_blk nr_devices=0 || nrp_fail "no null_blk"
		nrp_cleanup_push "modprobe -r null_blk"
		d=/sys/kernel/config/nullb/nrp0
		mkdir "$d" || nrp_fail "cannot create null_blk device"
		nrp_cleanup_push "rmdir $d"
		# memory_backed: reads return what was written, so data can be verified
		echo 1 >"$d/memory_backed"
		echo "$mib" >"$d/size"
		echo 1 >"$d/power" || nrp_fail "cannot power on null_blk device"
		nrp_cleanup_push "echo 0 >$d/power"
		# 6.1 names a configfs-made disk after its directory
		NRP_DEV=/dev/nrp0
		[ -b $NRP_DEV ] || NRP_DEV=/dev/nullb$(cat "$d/index") ;;
	loop)
		f=/run/nrp-backing.img
		truncate -s "${mib}M" $f
		nrp_cleanup_push "rm -f $f"
		modprobe loop
		d=$(losetup --find --show $f) || nrp_fail "cannot set up a loop device"
		nrp_cleanup_push "losetup -d $d"
		NRP_DEV=$d ;;
	*)	nrp_fail "unknown backing '$kind'" ;;
	esac
}

# Restrict the subsystem to the given host NQNs (empty: any host again).
nrp_nvmet_allow_hosts() {
	local cfs=/sys/kernel/config/nvmet h
	for h in "$cfs/subsystems/$NRP_SUBNQN/allowed_hosts"/*; do
		[ -L "$h" ] && rm "$h"
	done
	if [ $# = 0 ]; then
		echo 1 >"$cfs/subsystems/$NRP_SUBNQN/attr_allow_any_host"
		return
	fi
	echo 0 >"$cfs/subsystems/$NRP_SUBNQN/attr_allow_any_host"
	for h in "$@"; do
		if [ ! -d "$cfs/hosts/$h" ]; then
			mkdir "$cfs/hosts/$h"
			nrp_cleanup_push "rmdir $cfs/hosts/$h"
		fi
		ln -s "$cfs/hosts/$h" "$cfs/subsystems/$NRP_SUBNQN/allowed_hosts/$h"
		nrp_cleanup_push "rm -f $cfs/subsystems/$NRP_SUBNQN/allowed_hosts/$h"
	done
}

# The FFDHE groups of DH-HMAC-CHAP live in dh_generic. Built in (Debian's
# kernels) they are always there; as a module (our P2PDMA guest kernels)
# nothing loads it on demand for "ffdhe2048(dh)", whose name has no module
# alias, and nvmet and the host refuse the groups. An admin loads it once.
nrp_auth_dh_load() { modprobe -q dh_generic 2>/dev/null || true; }

# Sets T to the tracefs root, mounting it where the kernel has it but
# nothing mounted it yet; skips on a kernel without tracing.
nrp_tracefs_require() {
	T=/sys/kernel/tracing
	[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
	[ -e $T/trace ] || T=/sys/kernel/debug/tracing
	[ -e $T/trace ] || nrp_skip "this kernel has no tracefs (CONFIG_FTRACE off)"
}

# A fresh DH-HMAC-CHAP secret for host NQN $2, transformed with hash $1
# (0 none, 1 sha256, 2 sha384, 3 sha512), from nvme gen-dhchap-key. Prints
# the secret, or why there is none and returns 1: the set-up installs an
# nvme-cli that has the command, so no secret fails a test, never skips
# it. (Seen: it printed nothing while the kernel's CRNG was not seeded.)
nrp_dhchap_key() {
	local out rc
	out=$(nvme gen-dhchap-key --hmac="$1" --nqn="$2" 2>&1)
	rc=$?
	case $out in
	DHHC-1:0[0-3]:*:)
		echo "$out"
		return 0 ;;
	esac
	echo "nvme gen-dhchap-key --hmac=$1 gave no DHHC-1 secret (exit $rc): '${out:-nothing}';" \
		"nvme-cli $(nvme version 2>/dev/null | sed -n 's/^nvme version \([^ ]*\).*/\1/p')" \
		"(2.1 and later generate them), CRNG entropy $(cat /proc/sys/kernel/random/entropy_avail 2>/dev/null)"
	return 1
}

# Skip unless the host's nvme core (loaded by now) does in-band
# authentication.
nrp_auth_host_require() {
	grep -qw nvme_auth_negotiate /proc/kallsyms ||
		nrp_skip "the host's nvme core has no in-band authentication (CONFIG_NVME_AUTH / NVME_HOST_AUTH)"
}

# nvmet lets only host NQN $1 connect, and only once it authenticated with
# secret $2 (and, with $3, the target with $3): hmac(sha256), DH group $4
# (default ffdhe2048 where the kernel offers it). Prints the set-up;
# returns 4 when nvmet has no in-band authentication, 1 when a key is
# refused.
nrp_nvmet_auth_host() { # HOSTNQN KEY [CKEY [DHGROUP]]
	local h=/sys/kernel/config/nvmet/hosts/$1
	nrp_nvmet_allow_hosts "$1"
	[ -e "$h/dhchap_key" ] || { echo "nvmet has no in-band authentication"; return 4; }
	echo "$2" >"$h/dhchap_key" && echo "hmac(sha256)" >"$h/dhchap_hash" || return 1
	[ -z "${3:-}" ] || echo "$3" >"$h/dhchap_ctrl_key" || return 1
	nrp_auth_dh_load
	echo "${4:-ffdhe2048}" 2>/dev/null >"$h/dhchap_dhgroup" || echo null >"$h/dhchap_dhgroup"
	echo "host $1 must authenticate: hmac(sha256), $(cat "$h/dhchap_dhgroup")${3:+, bidirectional}"
}

# Disconnect every controller of our test subsystem (teardown helper).
nrp_disconnect_all() {
	nvme disconnect -n "$NRP_SUBNQN" >/dev/null 2>&1 || true
}

# --- the transport under test -------------------------------------------

NRP_DEBUGFS=/sys/kernel/debug/nvme-rdma-p2p

# Load our module under the alternate transport name (or $1).
nrp_load_ours() {
	local name=${1:-$NRP_TRANSPORT}
	shift || true
	nrp_load transport="$name" "$@"
}

# The full fixture most transport tests want: soft RDMA, a target on a RAM
# disk of $1 MiB (default 256), our module loaded.
nrp_std_setup() {
	local mib=${1:-256}
	nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
	nrp_backing_dev "${NRP_BACKING:-ram}" "$mib"
	nrp_nvmet_setup "$NRP_DEV" "${NRP_FAMILY:-ipv4}"
	nrp_load_ours
}

# nvme connect through our transport; extra nvme-cli options follow.
# The controller name (nvmeX) is left in NRP_CTRL.
nrp_connect() {
	local addr=$NRP_TGT_IP4 out ctrl
	[ "${NRP_FAMILY:-ipv4}" = ipv6 ] && addr=$NRP_TGT_IP6
	out=$(nvme connect -t "$NRP_TRANSPORT" -a "$addr" -s "$NRP_PORT" \
		-n "$NRP_SUBNQN" "$@" 2>&1) || nrp_fail "nvme connect failed: $out"
	nrp_cleanup_push nrp_disconnect_all
	ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN")
	[ -n "$ctrl" ] || nrp_fail "connect returned but no controller for $NRP_SUBNQN: $out"
	NRP_CTRL=$ctrl
}

# Connect through /dev/nvme-fabrics with options nvme-cli cannot pass;
# $1: the options after transport and nqn. The controller is left in
# NRP_CTRL.
nrp_connect_raw() {
	local out
	out=$(nrp_fabrics_write "transport=$NRP_TRANSPORT,nqn=$NRP_SUBNQN,$1") ||
		nrp_fail "connect $1 failed: $out"
	nrp_cleanup_push nrp_disconnect_all
	NRP_CTRL=nvme$(echo "$out" | sed -n 's/.*instance=\([0-9]*\).*/\1/p')
}

# First live controller (nvmeX) of a subsystem NQN.
nrp_ctrl_of_subsys() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$1" ] || continue
		basename "$c"
		return 0
	done
	return 1
}

# The namespace block device of controller $1: the multipath head disk when
# nvme_core.multipath is on (it lives under the nvme-subsystem), else the
# controller's own disk.
nrp_ns_dev() {
	local ctrl=$1 d n i
	# the namespace scan runs after the connect returns: seconds on a
	# loaded debug guest
	for i in $(seq $((50 * NRP_SLOW))); do
		for d in /sys/class/nvme-subsystem/*; do
			[ -e "$d/$ctrl" ] || continue
			for n in "$d"/nvme*n1 /sys/class/nvme/"$ctrl"/nvme*n1; do
				[ -e "$n" ] || continue
				n=$(basename "$n")
				case $n in *c*n*) continue ;; esac
				[ -b "/dev/$n" ] && { echo "/dev/$n"; return 0; }
			done
		done
		sleep 0.2
	done
	return 1
}

# The per-path disk of controller $1 (nvmeXcYnZ with multipath, else nvmeXnY):
# where a transport's queue limits and flags are visible.
nrp_path_disk() {
	local p
	p=$(ls -d /sys/class/nvme/"$1"/nvme*n1 2>/dev/null | head -n1)
	[ -n "$p" ] && basename "$p"
}

nrp_ctrl_state() { cat "/sys/class/nvme/$1/state" 2>/dev/null; }

# Wait up to $2 seconds for controller $1 to reach state $3 (default live).
# (bash builtins only, see nrp_nap: tests wait on states while fio runs)
nrp_wait_state() {
	local ctrl=$1 secs=$2 want=${3:-live} i st
	for ((i = 0; i < secs * 5; i++)); do
		st=
		read -r st 2>/dev/null <"/sys/class/nvme/$ctrl/state"
		[ "$st" = "$want" ] && return 0
		nrp_nap 0.2
	done
	return 1
}

# Wait up to $2 seconds for controller $1 to be gone; false if it stays.
nrp_wait_gone() {
	local ctrl=$1 secs=$2 i
	for ((i = 0; i < secs * 5; i++)); do
		[ -e "/sys/class/nvme/$ctrl" ] || return 0
		nrp_nap 0.2
	done
	return 1
}

# Is controller nvmeX driven by our module? (ours has a debugfs directory)
nrp_ctrl_is_ours() { [ -d "$NRP_DEBUGFS/$1" ]; }

# The build id of a module file (.ko, .ko.xz)...
nrp_ko_build_id() {
	case $1 in
	*.xz)	xz -dc "$1" >/tmp/nrp-build-id.ko && set -- /tmp/nrp-build-id.ko ;;
	esac
	readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3 }'
}
# ...and of our module in memory (the note after its 16-byte header): which
# file is loaded.
nrp_loaded_build_id() {
	od -An -v -tx1 -j16 "/sys/module/$NRP_MOD/notes/.note.gnu.build-id" | tr -d ' \n'
}
# The reference count of module $1 while /dev/$2 is open: nvme core holds
# the controller's transport module for each open of its character device,
# so this tells which module serves controller $2.
nrp_held_by() { # MODULE CTRL
	local before during after
	before=$(cat "/sys/module/$1/refcnt")
	exec 8<"/dev/$2" || return 1
	during=$(cat "/sys/module/$1/refcnt")
	exec 8<&-
	after=$(cat "/sys/module/$1/refcnt")
	echo "$1 references: $before, $during with /dev/$2 open, $after"
	[ "$during" -gt "$before" ] && [ "$during" -gt "$after" ]
}

# The value of line "$3 VALUE" of debugfs file $2 of controller $1.
nrp_debugfs_value() {
	awk -v k="$3" '$1 == k { print $2; f = 1 } END { if (!f) print "missing" }' \
		"$NRP_DEBUGFS/$1/$2" 2>/dev/null || echo missing
}

# One counter of controller $1.
nrp_stat() { nrp_debugfs_value "$1" stats "$2"; }

# Snapshot of the counters of NRP_CTRL, for nrp_delta.
nrp_snap() { _nrp_snap=$(cat "$NRP_DEBUGFS/$NRP_CTRL/stats"); }

# How much counter $1 of NRP_CTRL grew since nrp_snap.
nrp_delta() {
	local before now
	before=$(echo "$_nrp_snap" | awk -v k="$1" '$1 == k { print $2 }')
	now=$(nrp_stat "$NRP_CTRL" "$1")
	echo $((now - before))
}

# Counter $3 of controller $1 summed over its queues of type $2 (admin,
# default, read or poll: the "qid type <counters>" table of queue_stats);
# 0 when it has no queue of that type.
nrp_qstat() {
	awk -v t="$2" -v k="$3" '
		NR == 1 { for (i = 3; i <= NF; i++) if ($i == k) c = i; next }
		c && $2 == t { s += $c }
		END { print c ? s + 0 : "missing" }' \
		"$NRP_DEBUGFS/$1/queue_stats" 2>/dev/null || echo missing
}

# Sets NRP_VAL to counter $2 of controller $1 (empty when it cannot be
# read), with bash builtins (see nrp_nap).
nrp_read_stat() {
	local k v
	NRP_VAL=
	while read -r k v; do
		[ "$k" = "$2" ] && { NRP_VAL=$v; return 0; }
	done <"$NRP_DEBUGFS/$1/stats"
	return 1
}

# Wait up to $4 seconds (times NRP_SLOW) for counter $2 of controller $1
# to reach $3; false if it does not.
nrp_wait_stat() {
	local end=$((SECONDS + $4 * NRP_SLOW))
	while nrp_read_stat "$1" "$2"; do
		[ "$NRP_VAL" -ge "$3" ] && return 0
		[ $SECONDS -le $end ] || return 1
		nrp_nap 0.1
	done
	return 1
}

# The inflight file of controller $1's path disk: "reads writes" that the
# block layer handed to the transport and that have not completed.
nrp_inflight_file() { echo "/sys/class/nvme/$1/$(nrp_path_disk "$1")/inflight"; }

# Wait until a writer (fio, pid $2) has I/O in flight on controller $1:
# its commands counter grew by $3 since the call and writes are in flight
# on the path disk at this moment, so whatever happens next meets them.
# Gives up after $4 seconds (times NRP_SLOW). Returns 0 when so (the
# writes in flight left in NRP_INFLIGHT), 1 on timeout, 2 when the writer
# ended first.
nrp_wait_writing() {
	local ctrl=$1 pid=$2 n=$3 end c0 f r
	end=$((SECONDS + $4 * NRP_SLOW))
	f=$(nrp_inflight_file "$ctrl")
	nrp_read_stat "$ctrl" commands || return 1
	c0=$NRP_VAL
	while [ $SECONDS -le $end ]; do
		nrp_running "$pid" || return 2
		nrp_read_stat "$ctrl" commands || return 1
		read -r r NRP_INFLIGHT <"$f" || return 1
		[ $((NRP_VAL - c0)) -ge "$n" ] && [ "$NRP_INFLIGHT" -gt 0 ] && return 0
		nrp_nap 0.05
	done
	return 1
}

# Fail unless fio's terse (version 3) output $1 shows a job without error
# that wrote $2 KiB and read all of it back (its verify pass); $3 names
# the run. A verify that stopped short or never ran is not a pass.
nrp_fio_all_verified() {
	local line err rkb wkb
	line=$(grep '^3;' "$1" | tail -n1)
	[ -n "$line" ] || nrp_fail "$3: no fio result: $(tail -n 5 "$1")"
	IFS=';' read -r err rkb wkb <<<"$(echo "$line" | cut -d';' -f5,6,47)"
	[ "$err" = 0 ] || nrp_fail "$3: fio error $err: $(grep -v '^3;' "$1" | tail -n 5)"
	[ "$wkb" = "$2" ] || nrp_fail "$3: fio wrote $wkb KiB, not $2 KiB"
	[ "$rkb" = "$2" ] || nrp_fail "$3: fio read back $rkb KiB of the $2 KiB it wrote"
	echo "$3: fio wrote $2 KiB and read all of it back verified (crc32c)"
}

# Fail unless $2 (what was measured) equals $3 (what must be); $1 names it.
nrp_expect() {
	[ "$2" = "$3" ] || nrp_fail "$1: got $2, expected $3"
	echo "$1: $2"
}

# Data commands of controller $1 so far: each one's data is described by
# an FRWR registration, in the capsule, or by the global rkey.
nrp_data_cmds() {
	echo $(($(nrp_stat "$1" frwr_registrations) + $(nrp_stat "$1" inline_writes) +
		$(nrp_stat "$1" global_rkey_mappings)))
}

# fio with crc32c verification; extra fio options follow the device.
# A failing verify or I/O error fails the test.
nrp_fio_verify() {
	local dev=$1 out
	shift
	out=$(fio --name=nrp --filename="$dev" --direct=1 --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --group_reporting \
		--output-format=terse --terse-version=3 "$@" 2>&1) ||
		nrp_fail "fio $* on $dev failed: $(echo "$out" | tail -n 5)"
	echo "$out" | grep -q 'verify: bad' && nrp_fail "fio $*: verify failed"
	return 0
}

# Several nrp_fio_verify runs on device $1, one after the other, in one fio
# process: each further argument is the options of one run. Each run is
# its own fio job (--stonewall), as separate fio calls would be; only fio's
# start, seconds under TCG with its 64 shared libraries, is paid once.
nrp_fio_verify_runs() {
	local dev=$1 args=() i=0 r out
	shift
	for r in "$@"; do
		i=$((i + 1))
		# shellcheck disable=SC2206 # one run's options, split as words
		args+=(--name="run$i" --stonewall $r)
	done
	out=$(fio --filename="$dev" --direct=1 --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --output-format=terse --terse-version=3 "${args[@]}" 2>&1) ||
		nrp_fail "fio on $dev failed: $(echo "$out" | tail -n 5)"
	echo "$out" | grep -q 'verify: bad' && nrp_fail "fio on $dev: verify failed"
	# one terse line per run: a run that did not happen fails too
	[ "$(echo "$out" | grep -c '^3;')" = "$i" ] ||
		nrp_fail "fio on $dev reported $(echo "$out" | grep -c '^3;') of $i runs"
	return 0
}

# Before a test clears kmemleak's list to count only its own leaks: scan,
# and keep what the boot had reported so far where run-guest.sh's check of
# the boot reads it (DIR/kmemleak-saved.txt), so that clearing never
# discards a leak found earlier. No-op without kmemleak.
nrp_kmemleak_clear() {
	local kml=/sys/kernel/debug/kmemleak
	[ -w $kml ] || return 0
	echo scan >$kml
	if [ -d /nrp-job ]; then
		cat $kml >>/nrp-job/kmemleak-saved.txt
	else
		cat $kml
	fi
	echo clear >$kml
}

# Nothing of ours may survive a test: no controller, module unloadable.
nrp_assert_no_ctrls() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		nrp_fail "controller $(basename "$c") left behind ($(cat "$c/state" 2>/dev/null))"
	done
}

# --- two guests (tools/vm/run-pair.sh) ------------------------------------
# run-pair.sh gives each guest NRP_PAIR_ROLE (host or target), NRP_PAIR_CTL
# (the directory its requests go through), NRP_PAIR_MAC and NRP_PAIR_MAC2
# (its NICs on links 1 and 2) and the links' addresses (NRP_TGT_IP4,
# NRP_HOST_IP4, NRP_TGT2_IP4, NRP_HOST2_IP4, ...).

nrp_pair_need() {
	[ "${NRP_PAIR_ROLE:-}" = "$1" ] ||
		nrp_skip "needs the $1 guest of two (tools/vm/run-pair.sh)"
}

# Soft RDMA on this guest's NIC with the address of its role, the NIC's
# name left in NRP_NIC. $1: rxe (default) or siw. $2: the link, 1 (default)
# or 2, the second one run-pair.sh gives both guests (NRP_PAIR_MAC2, an
# IPv4 subnet of its own, NRP_HOST2_IP4 and NRP_TGT2_IP4, the names the
# multipath fixtures of lib_mpath.sh use); its NIC is left in NRP_NIC2.
nrp_rdma_nic_setup() {
	local type=${1:-rxe} link=${2:-1} n ip4 ip6= i mac nic= dev
	mac=${NRP_PAIR_MAC:-}
	ip4=$NRP_HOST_IP4 ip6=$NRP_HOST_IP6
	[ "$NRP_PAIR_ROLE" = target ] && ip4=$NRP_TGT_IP4 ip6=$NRP_TGT_IP6
	dev=nrp_${type}_0
	if [ "$link" = 2 ]; then
		mac=${NRP_PAIR_MAC2:-} ip4=$NRP_HOST2_IP4 ip6= dev=nrp_${type}_1
		[ "$NRP_PAIR_ROLE" = target ] && ip4=$NRP_TGT2_IP4
	fi
	modprobe virtio_net 2>/dev/null
	for ((i = 0; i < 50 && ${#nic} == 0; i++)); do
		for n in /sys/class/net/*; do
			[ "$(cat "$n/address" 2>/dev/null)" = "$mac" ] && nic=$(basename "$n")
		done
		[ -n "$nic" ] || sleep 0.2
	done
	[ -n "$nic" ] || nrp_fail "no NIC with MAC ${mac:-(none)} for link $link"
	modprobe "rdma_$type" 2>/dev/null || modprobe "$type" 2>/dev/null ||
		nrp_skip "no $type driver in this kernel"
	# (the address stays from an earlier test of the same boot)
	ip addr replace "$ip4/24" dev "$nic"
	[ -z "$ip6" ] || ip -6 addr replace "$ip6/64" dev "$nic" nodad
	ip link set "$nic" up
	# a test killed by its time limit did not run its cleanups
	rdma link delete "$dev" 2>/dev/null
	nrp_rdma_link "$type" "$nic" "$dev"
	if [ "$link" = 2 ]; then
		NRP_NIC2=$nic
	else
		NRP_NIC=$nic
	fi
}

# Ask the runner outside both guests for something (a fault, a command to
# the other guest); prints its answer and returns its status.
nrp_pair_ctl() {
	local f i rc
	f=$NRP_PAIR_CTL/$(date +%s%N)-$$
	echo "$*" >"$f.tmp" && mv "$f.tmp" "$f.req" || return 1
	for ((i = 0; i < ${NRP_PAIR_CTL_TMO:-330} * 5; i++)); do
		if [ -e "$f.rc" ]; then
			cat "$f.out" 2>/dev/null
			rc=$(cat "$f.rc")
			rm -f "$f".*
			return "$rc"
		fi
		sleep 0.2
	done
	echo "no answer to '$*'"
	return 1
}

# The host guest's fixture: soft RDMA on the NIC, the target guest
# answering across the link, our module loaded.
nrp_pair_host_setup() {
	local out
	nrp_pair_need host
	nrp_rdma_nic_setup "${NRP_RDMA_TYPE:-rxe}"
	out=$(nrp_pair_ctl wait-target 300) || nrp_fail "no target guest: $out"
	busybox ping -c 1 -W 10 "$NRP_TGT_IP4" >/dev/null ||
		nrp_fail "the target $NRP_TGT_IP4 does not answer across the link"
	nrp_load_ours
}

# Seconds since the epoch, with milliseconds; and the difference of two.
nrp_now() { date +%s.%3N; }
nrp_secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# The kernel reported no problem since nrp_dmesg_mark, by the same rules as
# run-guest.sh's check of the whole boot (tools/vm/classify-splats.py):
# every kind of report it knows fails, but upstream reports listed in
# tools/vm/known-splats.conf for this kernel series, up to their count,
# which are shown by name and pass.
nrp_assert_no_splat() {
	local vm log=/tmp/nrp-splats.log series rc=0
	vm=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../vm" && pwd)
	series=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	nrp_dmesg_since >"$log"
	python3 "$vm/classify-splats.py" --series "$series" "$vm/known-splats.conf" \
		"$log" >"$log.out" 2>&1 || rc=$?
	if [ "$rc" = 0 ]; then
		# by name only: the report's own words in the console would be
		# taken for a report by run-guest.sh's check of the boot
		! grep -q '^known ' "$log.out" ||
			echo "known upstream report, not ours:" \
				$(sed -n 's/^known \([^:]*\):.*/\1/p' "$log.out" | sort -u)
		return 0
	fi
	# 1 with a report; anything else is the checker's own failure (a
	# malformed known-splats.conf line): no verdict, never a pass
	[ "$rc" = 1 ] && grep -q '^unknown' "$log.out" ||
		nrp_fail "the kernel log checker failed (status $rc): $(tail -n 3 "$log.out")"
	nrp_fail "the kernel reported: $(grep -v '^known ' "$log.out" | head -n 5 | sed 's/^unknown: [^:]*: //')"
}

# fio writes and verifies (crc32c) $2, the namespace of controller $1,
# across a fault: 3 s into the run the runner is asked for "$3" (the fault),
# $5 seconds later for "$4" (the repair). Fails the test when fio ended
# before the fault, the controller does not notice (leave LIVE) within the
# fault, I/O fails instead of waiting, the controller is not LIVE 90 s
# (NRP_PAIR_LIVE_TMO) after the repair, fio fails or data does not
# verify, or recoveries and reconnects were not counted. What it measured is left in NRP_FAULT_REPORT.
# $6: fio's size in MiB (default NRP_PAIR_FIO_MB, else 24).
nrp_pair_fault_io() {
	local ctrl=$1 dev=$2 fault=$3 repair=$4 secs=$5 mib=${6:-${NRP_PAIR_FIO_MB:-24}}
	local log=/tmp/nrp-fio-fault.log rec0 con0 rec1 con1 fio_pid t0 t1 t2 td="" st seen=live out
	rec0=$(nrp_stat "$ctrl" recoveries)
	con0=$(nrp_stat "$ctrl" reconnects)
	fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
		--bs=16k --iodepth=16 --size="${mib}m" --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --output="$log" &
	fio_pid=$!
	nrp_cleanup_push "kill $fio_pid"
	sleep 3
	nrp_running $fio_pid ||
		nrp_fail "fio ended before the fault; raise NRP_PAIR_FIO_MB ($mib): $(cat $log)"
	out=$(nrp_pair_ctl "$fault") || nrp_fail "'$fault' failed: $out"
	t0=$(nrp_now)
	while [ "$(nrp_secs "$t0" "$(nrp_now)" | cut -d. -f1)" -lt "$secs" ]; do
		st=$(nrp_ctrl_state "$ctrl")
		[ "$st" != live ] && [ -z "$td" ] && td=$(nrp_secs "$t0" "$(nrp_now)")
		[ "$st" = "${seen##* }" ] || seen+=" $st"
		sleep 0.2
	done
	[ -n "$td" ] || nrp_fail "$ctrl stayed live through ${secs}s of '$fault'"
	nrp_running $fio_pid ||
		nrp_fail "fio ended during '$fault' (I/O failed instead of waiting): $(tail -n 5 $log)"
	out=$(nrp_pair_ctl "$repair") || nrp_fail "'$repair' failed: $out"
	t1=$(nrp_now)
	while [ "$(nrp_ctrl_state "$ctrl")" != live ]; do
		st=$(nrp_ctrl_state "$ctrl")
		[ "$st" = "${seen##* }" ] || seen+=" $st"
		[ "$(nrp_secs "$t1" "$(nrp_now)" | cut -d. -f1)" -lt "${NRP_PAIR_LIVE_TMO:-90}" ] ||
			nrp_fail "$ctrl not live ${NRP_PAIR_LIVE_TMO:-90} s after '$repair' ($st)"
		sleep 0.2
	done
	[ "${seen##* }" = live ] || seen+=" live"
	t2=$(nrp_now)
	wait $fio_pid || { cat $log; nrp_fail "fio failed across '$fault'"; }
	grep -q 'verify: bad' $log && nrp_fail "data corrupted across '$fault'"
	grep -q 'err= 0' $log || { cat $log; nrp_fail "fio reported errors across '$fault'"; }
	rec1=$(nrp_stat "$ctrl" recoveries)
	con1=$(nrp_stat "$ctrl" reconnects)
	[ "$rec1" != missing ] && [ "$rec1" -gt "$rec0" ] ||
		nrp_fail "no recovery counted across '$fault' ($rec0 -> $rec1)"
	[ "$con1" -gt "$con0" ] ||
		nrp_fail "no reconnect counted across '$fault' ($con0 -> $con1)"
	NRP_FAULT_REPORT="'$fault' for ${secs}s: left live after ${td}s; states: $seen;"
	NRP_FAULT_REPORT+=" live $(nrp_secs "$t1" "$t2")s after '$repair';"
	NRP_FAULT_REPORT+=" recoveries $rec0->$rec1, reconnects $con0->$con1,"
	NRP_FAULT_REPORT+=" reconnect_attempts $(nrp_stat "$ctrl" reconnect_attempts);"
	NRP_FAULT_REPORT+=" fio ${mib} MiB verified:$(grep -E '^ *(READ|WRITE): bw=' $log |
		sed -E 's/^ *(READ|WRITE): bw=([^ ]+).*/ \1 \2/' | tr '\n' ',' | sed 's/,$//')"
}

# NAME@mpn (run_tests.sh): nvme_core with multipath=N for this test,
# whatever the boot says (the full tier runs the P2P tests of the 6.12
# P2PDMA kernel, which boots with Y, so once more), and the boot's value
# back after it.
if [ -n "${NRP_CORE_MULTIPATH:-}" ]; then
	nrp_nvme_core_multipath "$NRP_CORE_MULTIPATH"
	[ "$(cat /sys/module/nvme_core/parameters/multipath)" = "$NRP_CORE_MULTIPATH" ] ||
		nrp_fail "nvme_core multipath is $(cat /sys/module/nvme_core/parameters/multipath) after reloading it with $NRP_CORE_MULTIPATH"
fi
