#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P through a multipath head, and what happens when a path that cannot
# carry P2P joins (issue 28). nvme_core multipath=Y, two paths of ours to
# one namespace (two target ports on two veth pairs): the head takes P2P
# pages, a checkpoint from GPU memory through it is byte-exact and both
# paths map P2P pages (round-robin). Then, with host-memory fio running on
# the head, a controller of the in-tree nvme_rdma joins the subsystem: the
# head loses the P2P mark before that path can receive I/O (the mark is
# off as soon as the connect returns, before its namespace scan), a P2P
# checkpoint through the head is refused cleanly (the submitter checks the
# mark), while the host-memory I/O goes on and verifies, part of it over
# the in-tree path. When the in-tree path leaves, the mark comes back and
# P2P works again, over our paths only.
# nrp-timeout: 900
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 128
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect_path 1; c1=$NRP_CTRL
nrp_connect_path 2; c2=$NRP_CTRL
NRP_NS=$(nrp_head_dev round-robin) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked for P2P with two P2P-capable paths of ours: $(cat "$NRP_DEBUGFS/heads")"
echo "head $NRP_NS over $c1 and $c2: P2P on"

# P2P through the head, spread over both paths
NRP_CTRL=$c1; nrp_snap; s1=$_nrp_snap
NRP_CTRL=$c2; nrp_snap; s2=$_nrp_snap
NRP_CTRL=$c1
nrp_p2p_ckpt --size 32M --chunk 1M --qd 8
p1=$(_nrp_snap=$s1 NRP_CTRL=$c1 nrp_delta p2p_bytes_mapped)
p2=$(_nrp_snap=$s2 NRP_CTRL=$c2 nrp_delta p2p_bytes_mapped)
hb=$(($(_nrp_snap=$s1 NRP_CTRL=$c1 nrp_delta host_bytes_mapped) + $(_nrp_snap=$s2 NRP_CTRL=$c2 nrp_delta host_bytes_mapped)))
nrp_expect "P2P bytes over both paths" $((p1 + p2)) $((64 << 20))
nrp_expect "host bytes" "$hb" 0
[ "$p1" -gt 0 ] && [ "$p2" -gt 0 ] || nrp_fail "P2P went over one path only ($p1, $p2)"
echo "checkpoint through the head: $((p1 >> 20)) + $((p2 >> 20)) MiB from P2P memory over the two paths, nothing bounced"

# host-memory I/O on the head while an in-tree path joins
fio --name=host --filename="$NRP_NS" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=16 --size=96m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/mixed-fio.log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
modprobe --ignore-install nvme-rdma || nrp_fail "cannot load the in-tree nvme-rdma"
nrp_cleanup_push "modprobe -r nvme_rdma"
before=$(ls /sys/class/nvme)
nvme connect -t rdma -a "$NRP_TGT2_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" -D >/dev/null 2>&1 ||
	nrp_fail "the in-tree nvme_rdma did not connect"
mark=$(nrp_head_p2p "$h")
c3=
for c in $(ls /sys/class/nvme); do echo "$before" | grep -qx "$c" || c3=$c; done
[ -n "$c3" ] && [ "$(cat /sys/class/nvme/$c3/transport)" = rdma ] && ! nrp_ctrl_is_ours "$c3" ||
	nrp_fail "no in-tree controller joined ($c3)"
nrp_expect "head's P2P mark as the in-tree connect returns" "$mark" 0
for _ in $(seq 50); do p3=$(nrp_path_sysfs "$c3") && break; sleep 0.2; done
[ -n "$p3" ] || nrp_fail "the in-tree path joined no head"
out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --stats none 2>&1)
rc=$?
[ "$rc" = 3 ] || nrp_fail "a P2P checkpoint with the in-tree path in the head: exit $rc, expected 3 (refused): $out"
echo "in-tree $c3 joined: head P2P off at once, a P2P checkpoint is refused (exit 3)"
wait $fio_pid || { tail -n 20 /tmp/mixed-fio.log; nrp_fail "host-memory fio failed while the in-tree path joined"; }
grep -q 'verify: bad' /tmp/mixed-fio.log && nrp_fail "host-memory data corrupted"
ios3=$(nrp_path_ios "$p3")
[ "${ios3:-0}" -gt 0 ] || nrp_fail "the in-tree path carried no host-memory I/O"
echo "host-memory fio verified through the head; the in-tree path carried $ios3 I/Os"

nrp_must nvme disconnect -d "$c3"
nrp_wait_gone "$c3" 30 || nrp_fail "$c3 still there"
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h did not take P2P again after the in-tree path left: $(cat "$NRP_DEBUGFS/heads")"
NRP_CTRL=$c1; nrp_snap; s1=$_nrp_snap
NRP_CTRL=$c2; nrp_snap; s2=$_nrp_snap
NRP_CTRL=$c1
nrp_p2p_ckpt --size 16M --chunk 1M --qd 8
p1=$(_nrp_snap=$s1 NRP_CTRL=$c1 nrp_delta p2p_bytes_mapped)
p2=$(_nrp_snap=$s2 NRP_CTRL=$c2 nrp_delta p2p_bytes_mapped)
nrp_expect "P2P bytes after the in-tree path left" $((p1 + p2)) $((32 << 20))
echo "in-tree path gone: head P2P on again, checkpoint byte-exact over our paths"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
