#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A controller of another transport is judged by the subsystem it reports,
# not by the NQN it connected to (issue 44, finding 1). nvme_core
# multipath=Y; ours serves subsystem S (nvmet over rxe, allow_soft_p2p=1)
# and its head is marked for P2P. tools/hostile-target -m alias, an
# NVMe/TCP target, accepts the in-tree nvme_tcp's Connect to another NQN
# X, reports S in Identify (with the multi-controller bit) and a namespace
# with the UUID and NGUID of nvmet's namespace 1: the host's nvme core
# makes it a path of S's head. Before that path can take I/O the head must
# lose the mark ("p2p 0" in debugfs heads) and a P2P checkpoint through it
# be refused; once the alias controller is gone the mark comes back and a
# P2P checkpoint is byte-exact over our path. Before the fix the module
# took X for the foreign controller's subsystem and left S's head marked.
. "$(dirname "$0")/lib_p2p.sh"

ht=$(cd "$(dirname "$0")/../../../.." && pwd)/tools/hostile-target/hostile-target
alias_nqn=nqn.2026-11.io.nvme-rdma-p2p:alias
alias_port=4421

nrp_p2p_require
[ -x "$ht" ] || nrp_fail "$ht not built (make -C tools/hostile-target; needs libibverbs-dev, librdmacm-dev)"
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
ns=/sys/kernel/config/nvmet/subsystems/$NRP_SUBNQN/namespaces/1
# a fixed NGUID beside nvmet's random UUID: the alias reports both
echo 0 >"$ns/enable"
echo 00112233-4455-6677-8899-aabbccddeeff >"$ns/device_nguid"
echo 1 >"$ns/enable" || nrp_fail "cannot enable namespace 1 again"
uuid=$(cat "$ns/device_uuid")
nguid=$(cat "$ns/device_nguid")
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect
ours=$NRP_CTRL
NRP_NS=$(nrp_ns_dev "$ours") || nrp_fail "no namespace on $ours"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked with our one path: $(cat "$NRP_DEBUGFS/heads")"
echo "ours: $ours, head $h marked (namespace UUID $uuid, NGUID $nguid)"

"$ht" -m alias -a "$NRP_TGT_IP4" -p $alias_port -S "$NRP_SUBNQN" -u "$uuid" -g "$nguid" \
	-s 64 >/tmp/nrp-alias.log 2>&1 &
apid=$!
nrp_cleanup_push "kill $apid"
for _ in $(seq 50); do grep -q '^ready' /tmp/nrp-alias.log && break; sleep 0.1; done
grep -q '^ready' /tmp/nrp-alias.log || nrp_fail "the alias target did not start: $(cat /tmp/nrp-alias.log)"
modprobe nvme-tcp || nrp_fail "no nvme-tcp in this kernel"
nrp_cleanup_push "modprobe -r nvme_tcp"
before=$(ls /sys/class/nvme)
out=$(nvme connect -t tcp -a "$NRP_TGT_IP4" -s $alias_port -n "$alias_nqn" 2>&1) ||
	nrp_fail "in-tree nvme_tcp did not connect to $alias_nqn: $out; $(tail -n 5 /tmp/nrp-alias.log)"
nrp_cleanup_push "nvme disconnect -n $alias_nqn"
c=
for x in $(ls /sys/class/nvme); do echo "$before" | grep -qx "$x" || c=$x; done
[ -n "$c" ] && [ "$(cat /sys/class/nvme/"$c"/transport)" = tcp ] || nrp_fail "no nvme_tcp controller ($c)"
[ "$(cat /sys/class/nvme/"$c"/subsysnqn)" = "$NRP_SUBNQN" ] ||
	nrp_fail "$c connected to $alias_nqn reports $(cat /sys/class/nvme/"$c"/subsysnqn), not $NRP_SUBNQN"
for _ in $(seq 100); do p=$(ls -d /sys/class/nvme/"$c"/nvme*c*n1 2>/dev/null) && break; sleep 0.2; done
[ -n "$p" ] || nrp_fail "the alias controller $c joined no head: $(nrp_dmesg_since | grep "$c" | tail -n 3)"
[ -e "/sys/block/$h/multipath/$(basename "$p")" ] || [ ! -d "/sys/block/$h/multipath" ] ||
	nrp_fail "path $(basename "$p") is not under head $h: $(ls "/sys/block/$h/multipath")"
echo "in-tree nvme_tcp $c, connected to $alias_nqn, reports $NRP_SUBNQN: path $(basename "$p") of head $h"
mark=$(nrp_head_p2p "$h")
nrp_expect "head $h's P2P mark with the alias path in it" "$mark" 0
out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --stats none 2>&1)
rc=$?
[ "$rc" = 3 ] || nrp_fail "a P2P checkpoint with the alias path in the head: exit $rc, expected 3 (refused): $out"
echo "a P2P checkpoint through $h is refused (exit 3)"

nrp_must nvme disconnect -d "$c"
nrp_wait_gone "$c" 30 || nrp_fail "$c still there"
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked again after the alias left: $(cat "$NRP_DEBUGFS/heads")"
nrp_p2p_ckpt_exact $((8 << 20)) --chunk 1M --qd 8
echo "alias gone: head $h marked again, checkpoint byte-exact over $ours"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
