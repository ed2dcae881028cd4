#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A P2P checkpoint through a multipath head while one path is lost in the
# middle (issue 28). nvme_core multipath=Y, two paths of ours (two target
# ports on two veth pairs), round-robin. A checkpoint of NRP_PATHLOSS_MIB
# (default 1024, 256 in the check tier) from GPU memory through the head:
# written, then read back; port 2 goes away while it runs. It must complete
# and verify byte-exact, with nothing bounced (no host bytes on the I/O
# queues; the reconnect's own Identify and log pages are host memory on the
# admin queue), P2P pages
# mapped over both paths (what was in flight on path 2 when it went is sent
# again over path 1, so the P2P count is the payload plus at most that),
# and path 2 must come back when the port does and carry P2P I/O again.
#
# Linux 6.2 and later (the 6.12 P2PDMA kernel): the checkpoint is what an
# application does, P2P memory mapped into a process (p2pmem/allocate) and
# written and read with O_DIRECT through io_uring. Linux 6.1 has no
# user-space P2PDMA: the GPU stand-in's in-kernel mover writes and reads.
# nrp-timeout: 1800
. "$(dirname "$0")/lib_mpath.sh"

mib=${NRP_PATHLOSS_MIB:-1024}
[ "${NRP_TIER:-}" = check ] && mib=${NRP_PATHLOSS_MIB:-256}
nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup_ckpt
user=$NRP_CKPT_USER
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram $((mib + 16))
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
NRP_P2P_MODPARAMS=max_mr_pages=257
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1 max_mr_pages=257
nrp_connect_path 1 --reconnect-delay=1; c1=$NRP_CTRL
nrp_connect_path 2 --reconnect-delay=1; c2=$NRP_CTRL
NRP_NS=$(nrp_head_dev round-robin) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked for P2P: $(cat "$NRP_DEBUGFS/heads")"
p1=$(nrp_path_sysfs "$c1") && p2=$(nrp_path_sysfs "$c2") || nrp_fail "no path disks"
pstat() { # CTRL COUNTER
	nrp_stat "$1" "$2"
}
b1=$(pstat "$c1" p2p_bytes_mapped) b2=$(pstat "$c2" p2p_bytes_mapped)
hb1=$(nrp_io_stat "$c1" host_bytes_mapped) hb2=$(nrp_io_stat "$c2" host_bytes_mapped)
rc1=$(pstat "$c1" reconnects) rc2=$(pstat "$c2" reconnects)
su1=$(nrp_ioq_setups "$c1" "$c2")
echo "head $NRP_NS over $c1 and $c2, P2P on; a $mib MiB checkpoint, $([ -n "$user" ] && echo "user-space O_DIRECT from mapped P2P memory" || echo "the in-kernel mover")"

nrp_ckpt_start "$mib" /tmp/pathloss-ckpt.log
# cut path 2 once a quarter of the write went over it
nrp_ckpt_wait "$b2" $((mib << 18)) $((1200 * NRP_SLOW)) "path 2 could be cut" pstat "$c2" p2p_bytes_mapped
t0=$(nrp_now)
nrp_port_off 2 || nrp_fail "cannot take port 2 away"
nrp_cleanup_push "nrp_port_on 2"
nrp_wait_left_live "$c2" 30 || nrp_fail "$c2 stayed live with its port gone"
tl=$NRP_LEFT
echo "port 2 away $(nrp_secs "$t0" "$tl")s: $c2 $(nrp_ctrl_state "$c2")"
# Path 2's requests, started or waiting for their queue, leave it within
# a bound of its controller leaving live (failover, not an I/O timeout
# or the reconnect), as in test_failover_queued.sh (9.2 s measured on a
# host loaded by four other guests).
bound=$(nrp_failover_bound)
nrp_expect_failover "path 2" "$tl" "$bound" "$p2"
echo "path 2 empty ${NRP_FAILOVER_SECS}s after $c2 left live, $(nrp_secs "$t0" "$(nrp_now)")s after the cut (bound: ${bound}s after leaving live)"
# back after the checkpoint went on over path 1 alone for 32 MiB; a
# path 1 that stalls fails the test
a1=$(pstat "$c1" p2p_bytes_mapped)
nrp_ckpt_wait "$a1" $((32 << 20)) $((600 * NRP_SLOW)) "" pstat "$c1" p2p_bytes_mapped
moved=$(($(pstat "$c1" p2p_bytes_mapped) - a1))
[ "$moved" -ge $((32 << 20)) ] || ! nrp_running "$NRP_CKPT_PID" ||
	nrp_fail "path 1 carried $((moved >> 20)) MiB in $((60 * NRP_SLOW))s after the cut: it stalls"
nrp_port_on 2 || nrp_fail "cannot give port 2 back"
nrp_wait_state "$c2" $((60 * NRP_SLOW)) || nrp_fail "$c2 not live after port 2 came back"
echo "port 2 back after $(nrp_secs "$t0" "$(nrp_now)")s: $c2 live"
nrp_ckpt_end "the path loss"
d1=$(($(pstat "$c1" p2p_bytes_mapped) - b1)) d2=$(($(pstat "$c2" p2p_bytes_mapped) - b2))
hb=$(($(nrp_io_stat "$c1" host_bytes_mapped) - hb1 + $(nrp_io_stat "$c2" host_bytes_mapped) - hb2))
# The only host memory an I/O queue maps here is a reconnect's Connect
# command: 1 KiB of Connect data on each I/O queue of the controller.
rc=$(($(pstat "$c1" reconnects) - rc1 + $(pstat "$c2" reconnects) - rc2))
nq=$(awk 'NR > 1 && $1 > 0' "$NRP_DEBUGFS/$c2/queue_stats" | wc -l)
[ "$rc" -ge 1 ] || nrp_fail "no reconnect counted after port 2 came back"
nrp_expect_connect_data "$hb" "$rc" "$nq" $(($(nrp_ioq_setups "$c1" "$c2") - su1))
[ "$d1" -gt 0 ] && [ "$d2" -gt 0 ] || nrp_fail "P2P I/O on one path only ($d1, $d2)"
total=$((d1 + d2)) payload=$((2 * mib << 20))
# at most 16 commands of 1 MiB were on path 2 when it went, each sent again
[ "$total" -ge "$payload" ] && [ "$total" -le $((payload + (16 << 20))) ] ||
	nrp_fail "P2P bytes $total over both paths, payload $payload (up to 16 MiB sent again)"
echo "P2P bytes: $((d1 >> 20)) MiB over $c1, $((d2 >> 20)) MiB over $c2: payload $((payload >> 20)) MiB + $(((total - payload) >> 20)) MiB sent again; host bytes: the Connect data alone"
# path 2 carries P2P again
b2=$(pstat "$c2" p2p_bytes_mapped)
if [ -n "$user" ]; then
	nrp_p2p_user served --dev "$NRP_NS" --size 32M --io uring --chunk 1M --qd 8 --stats none
else
	nrp_p2p_ckpt --size 32M --chunk 1M --qd 8
fi
[ "$(pstat "$c2" p2p_bytes_mapped)" -gt "$b2" ] || nrp_fail "path 2 carries no P2P I/O after it came back"
echo "path 2 back in use: $((($(pstat "$c2" p2p_bytes_mapped) - b2) >> 20)) MiB of P2P over it"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
