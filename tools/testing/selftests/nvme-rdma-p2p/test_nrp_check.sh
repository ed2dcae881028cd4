#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check on any guest kernel, against what the kernel says:
#  - bad arguments: exit 2 and a message, no report;
#  - the module not loaded: not ready, and the fix loads it; the kernel's
#    P2PDMA from its config or kallsyms, as /proc/kallsyms has it;
#  - the module loaded: its p2p parameter is the source. Without P2PDMA
#    (the stock kernel): not ready, saying why (CONFIG_PCI_P2PDMA) with
#    the fix, the GPU stand-in's device (--provider) without P2PDMA
#    memory and every pair refused by this kernel. With P2PDMA: the GPU
#    stand-in a published provider, and its pair with another PCI device
#    on the root bus (a virtio 9p device, --client) decided as the kernel
#    decides it (tools/nrp-p2pdist).
. "$(dirname "$0")/lib_check.sh"

command -v python3 >/dev/null || nrp_fail "python3 is not installed"
[ -x "$NRP_CHECK" ] || nrp_fail "$NRP_CHECK missing"
nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD loaded before the test"

has=0
grep -qw pci_p2pdma_add_resource /proc/kallsyms && has=1
echo "the kernel $(uname -r) has P2PDMA: $has (kallsyms)"

# Bad arguments: a message naming the problem, exit 2, no report.
for a in "--client zz" "--provider 0000:7f:1f.7" "--json --bogus"; do
	# shellcheck disable=SC2086 # words of their own
	out=$("$NRP_CHECK" $a 2>&1)
	rc=$?
	[ "$rc" = 2 ] || nrp_fail "nrp-check $a: exit $rc, expected 2: $out"
	echo "$out" | grep -q "^nrp-check: error: " || nrp_fail "nrp-check $a: no error line: $out"
	echo "$out" | grep -q "^Kernel" && nrp_fail "nrp-check $a printed a report"
done
echo "bad arguments: exit 2 with a message"

# The module not loaded.
nrp_check
nrp_check_expect module.loaded fail "installed: updates/"
nrp_check_fix module.loaded "modprobe nvme-rdma-p2p"
nrp_check_result "not ready" "nvme_rdma_p2p: not loaded"
if [ "$has" = 1 ]; then
	nrp_check_expect kernel.p2pdma ok
else
	nrp_check_expect kernel.p2pdma fail "built without CONFIG_PCI_P2PDMA"
	nrp_check_fix kernel.p2pdma "CONFIG_PCI_P2PDMA=y"
fi

# The module loaded: its p2p parameter says what this kernel can do.
nrp_load_ours
st=$(cat /sys/module/$NRP_MOD/parameters/p2p)
gpu=$(nrp_pci_find 0x1af4:0x1110) || nrp_fail "no ivshmem device (the GPU stand-in) in this guest"
client=$(nrp_pci_find 0x1af4:0x1009) || nrp_fail "no virtio 9p PCI device in this guest"
if [ "$has" = 0 ]; then
	nrp_check --provider "$gpu" --client "$client"
	nrp_check_expect kernel.p2pdma fail "parameters/p2p: $st"
	nrp_check_fix kernel.p2pdma "CONFIG_PCI_P2PDMA=y"
	nrp_check_expect module.p2p fail "unavailable: kernel built without CONFIG_PCI_P2PDMA"
	nrp_check_result "not ready" "built without CONFIG_PCI_P2PDMA"
	nrp_check_expect "provider:$gpu" fail "no P2PDMA memory registered"
	nrp_check_expect "pair:$gpu:$client" fail "refused, no P2PDMA"
	[ "$(nrp_check_val "pair:$gpu:$client" data.kernel_decision)" = refused ] ||
		nrp_fail "a pair not refused on a kernel without P2PDMA"
	nrp_pass
fi

NRP_GPU_ARGS="window_mb=16" nrp_gpu_setup
nrp_p2pdist_load
nrp_check --client "$client"
nrp_check_expect kernel.p2pdma ok "parameters/p2p: $st"
nrp_check_expect module.p2p ok "available"
nrp_check_expect "provider:$gpu" ok "published"
nrp_check_vs_kernel "$gpu" "$client"
# a pair on the root bus has no common upstream bridge
[ "$(nrp_check_val "pair:$gpu:$client" data.common_upstream)" = null ] ||
	nrp_fail "$gpu and $client on the root bus with a common upstream bridge?"
nrp_check_expect "pair:$gpu:$client" "$(case $(nrp_check_val "pair:$gpu:$client" data.decision) in
	refused) echo fail ;; *) echo ok ;; esac)" "across the host bridge"
nrp_pass
