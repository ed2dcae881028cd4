#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ANA: the optimized path changes during a P2P checkpoint through a
# multipath head (issue 28). Two paths of ours (two nvmet ports), nvme_core
# multipath=Y with the numa policy, which sends I/O to an optimized path.
# Port 1 starts optimized, port 2 non-optimized: the checkpoint's I/O goes
# over path 1. Mid-way nvmet makes port 1 inaccessible and port 2
# optimized (the host learns it from an ANA change event and the ANA log);
# commands already on path 1 come back with an ANA status and go down
# path 2 with the rest. The checkpoint must verify byte-exact, nothing
# bounced, P2P over both paths; then the states swap back and path 1
# carries the I/O again. Both ports start inaccessible, so the head disk
# goes live only after the scan, with the first ANA change. Linux 6.2 and
# later: user-space O_DIRECT from mapped P2P memory; 6.1: the in-kernel
# mover.
# nrp-timeout: 1800
. "$(dirname "$0")/lib_mpath.sh"

mib=${NRP_ANA_MIB:-512}
[ "${NRP_TIER:-}" = check ] && mib=${NRP_ANA_MIB:-128}
nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup_ckpt
user=$NRP_CKPT_USER
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram $((mib + 16))
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
# Both ports inaccessible at connect: the head disk goes live only with the
# ANA change below, after the scan; its P2P mark must be right then too.
nrp_ana 1 inaccessible || nrp_fail "nvmet has no ANA state for port 1"
nrp_ana 2 inaccessible
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1 max_mr_pages=257
nrp_connect_path 1; c1=$NRP_CTRL
nrp_connect_path 2; c2=$NRP_CTRL
nrp_ana 1 optimized
nrp_ana 2 non-optimized
NRP_NS=$(nrp_head_dev numa) || nrp_fail "no head disk after port 1 became optimized"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h, live after an ANA change, not marked for P2P: $(cat "$NRP_DEBUGFS/heads")"
p1=$(nrp_path_sysfs "$c1") && p2=$(nrp_path_sysfs "$c2") || nrp_fail "no path disks"
for _ in $(seq 50); do
	[ "$(cat "$p1/ana_state" 2>/dev/null)" = optimized ] &&
		[ "$(cat "$p2/ana_state" 2>/dev/null)" = non-optimized ] && break
	sleep 0.2
done
echo "head $NRP_NS: $c1 $(cat "$p1/ana_state"), $c2 $(cat "$p2/ana_state")"
b1=$(nrp_stat "$c1" p2p_bytes_mapped) b2=$(nrp_stat "$c2" p2p_bytes_mapped)
hb=$(($(nrp_io_stat "$c1" host_bytes_mapped) + $(nrp_io_stat "$c2" host_bytes_mapped)))

nrp_ckpt_start "$mib" /tmp/ana-ckpt.log
nrp_ckpt_wait "$b1" $((mib << 18)) $((1200 * NRP_SLOW)) "the ANA change" nrp_stat "$c1" p2p_bytes_mapped
[ "$(nrp_stat "$c2" p2p_bytes_mapped)" = "$b2" ] ||
	nrp_fail "P2P went over the non-optimized path before the change"
t0=$(nrp_now)
nrp_ana 1 inaccessible
nrp_ana 2 optimized
for _ in $(seq 300); do
	[ "$(cat "$p1/ana_state")" = inaccessible ] && [ "$(cat "$p2/ana_state")" = optimized ] && break
	sleep 0.1
done
[ "$(cat "$p2/ana_state")" = optimized ] || nrp_fail "the host did not learn the ANA change: $(cat "$p1/ana_state"), $(cat "$p2/ana_state")"
echo "ANA change seen by the host after $(nrp_secs "$t0" "$(nrp_now)")s: $c1 $(cat "$p1/ana_state"), $c2 $(cat "$p2/ana_state")"
nrp_ckpt_end "the ANA change"
d1=$(($(nrp_stat "$c1" p2p_bytes_mapped) - b1)) d2=$(($(nrp_stat "$c2" p2p_bytes_mapped) - b2))
nrp_expect "host bytes" $(($(nrp_io_stat "$c1" host_bytes_mapped) + $(nrp_io_stat "$c2" host_bytes_mapped) - hb)) 0
[ "$d1" -gt 0 ] && [ "$d2" -gt 0 ] || nrp_fail "P2P over one path only ($d1, $d2)"
total=$((d1 + d2)) payload=$((2 * mib << 20))
[ "$total" -ge "$payload" ] && [ "$total" -le $((payload + (16 << 20))) ] ||
	nrp_fail "P2P bytes $total over both paths, payload $payload (up to 16 MiB sent again)"
echo "P2P: $((d1 >> 20)) MiB over $c1 before, $((d2 >> 20)) MiB over $c2 after; payload $((payload >> 20)) MiB; nothing bounced"

# and back
nrp_ana 2 non-optimized
nrp_ana 1 optimized
for _ in $(seq 300); do
	[ "$(cat "$p1/ana_state")" = optimized ] && break
	sleep 0.1
done
b1=$(nrp_stat "$c1" p2p_bytes_mapped)
if [ -n "$user" ]; then
	nrp_p2p_user served --dev "$NRP_NS" --size 16M --io uring --chunk 1M --qd 8 --stats none
else
	nrp_p2p_ckpt --size 16M --chunk 1M --qd 8
fi
[ "$(nrp_stat "$c1" p2p_bytes_mapped)" -gt "$b1" ] || nrp_fail "path 1 carries nothing once optimized again"
echo "states swapped back: P2P over $c1 again"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
