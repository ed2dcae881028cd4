#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check over soft RDMA on a P2PDMA kernel, with and without
# allow_soft_p2p, against what the kernel does (nvme_core.multipath=N,
# the GPU stand-in, rxe):
#  - allow_soft_p2p=0: not ready; the parameter, every pair of the GPU
#    stand-in with a soft device, the controller (p2p_capable 0) and its
#    disk fail, each with the fix (reload with allow_soft_p2p=1); and the
#    kernel agrees: the P2P submitter is refused the disk (its queue
#    lacks the P2PDMA flag);
#  - allow_soft_p2p=1, before a connect: ready, with nothing connected;
#    after it: ready through the controller's disk, which the P2P
#    submitter then takes for a byte-exact checkpoint of BAR pages, all of
#    them mapped as P2P.
. "$(dirname "$0")/lib_check.sh"

command -v python3 >/dev/null || nrp_fail "python3 is not installed"
nrp_p2p_require
nrp_nvme_core_multipath N
# a window of 16 MiB for the driver, the rest of the BAR free for user
# space (p2pmem/allocate, 6.2 on): a provider nrp-check rates ok
NRP_GPU_ARGS=window_mb=16 nrp_gpu_setup
gpu=$(basename "$NRP_GPU_PCI")
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
type=${NRP_RDMA_TYPE:-rxe}
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"


# --- allow_soft_p2p=0
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=0
nrp_check
nrp_check_result "not ready"
nrp_check_expect module.allow_soft_p2p fail "the only RDMA devices are soft"
nrp_check_fix module.allow_soft_p2p "allow_soft_p2p=1"
for dev in "nrp_${type}_h" "nrp_${type}_t"; do
	nrp_check_expect "rdma:$dev" info "soft RDMA ($type on nrp-"
	nrp_check_expect "pair:$gpu:$dev" fail "allow_soft_p2p=N"
	nrp_check_fix "pair:$gpu:$dev" "allow_soft_p2p=1"
done
nrp_check_expect "provider:$gpu" ok "published"
nrp_check_expect controllers info "no NVMe-oF RDMA controller"

nrp_connect
ns=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
disk=$(basename "$ns")
nrp_check
nrp_check_result "not ready"
nrp_check_expect "controller:$NRP_CTRL" fail "p2p_capable 0"
nrp_check_fix "controller:$NRP_CTRL" "allow_soft_p2p=1"
nrp_check_expect "namespace:$disk" fail "does not take P2P pages"
out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$ns" --size 1M --stats none 2>&1)
rc=$?
[ "$rc" = 3 ] ||
	nrp_fail "the P2P submitter exits $rc for $ns, which nrp-check says refuses P2P pages (3 expected): $out"
echo "the kernel refuses P2P pages for $ns too"
nrp_disconnect_all
nrp_wait_gone "$NRP_CTRL" 30 || nrp_fail "$NRP_CTRL stays after disconnect"
nrp_must modprobe -r $NRP_MOD

# --- allow_soft_p2p=1
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_check
nrp_check_result ready
nrp_check_expect module.allow_soft_p2p ok
nrp_check_expect "pair:$gpu:nrp_${type}_h" ok "allow_soft_p2p=Y"
grep -q "^READY: .*no controller connected yet" /tmp/nrp-check.txt ||
	nrp_fail "the summary does not say that no controller is connected"

nrp_connect
ns=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
disk=$(basename "$ns")
nrp_check
nrp_check_result ready
nrp_check_expect "controller:$NRP_CTRL" ok "p2p_capable 1"
nrp_check_expect "namespace:$disk" ok "takes P2P pages"
[ "$(nrp_check_val result namespaces)" = "$disk" ] ||
	nrp_fail "ready through '$(nrp_check_val result namespaces)', expected $disk"
# which RDMA device the controller uses, from the rdma_cm ids
devs=$(nrp_check_val "controller:$NRP_CTRL" data.rdma_devices)
[[ $devs == *"nrp_${type}_"* ]] || nrp_fail "the controller's RDMA devices: $devs"
NRP_NS=$ns
nrp_snap
nrp_p2p_ckpt --size 1M
nrp_p2p_expect p2p_bytes_mapped $((2 << 20)) "a checkpoint nrp-check said could work"
nrp_p2p_expect host_bytes_mapped 0 "a checkpoint nrp-check said could work"
echo "the kernel takes $ns for P2P pages: the checkpoint is byte-exact and all P2P"
nrp_pass
