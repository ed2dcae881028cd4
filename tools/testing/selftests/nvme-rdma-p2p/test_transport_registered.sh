#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nvme-fabrics routes a connect for our transport name to this module, and
# stops doing so once the module is gone.
. "$(dirname "$0")/lib.sh"

name=nrptest
# an address nothing listens on: the connect must fail, but in our code
opts="transport=$name,traddr=127.0.0.1,trsvcid=4420,nqn=$NRP_SUBNQN"

modprobe nvme-fabrics || nrp_fail "cannot load nvme-fabrics"
nrp_dmesg_mark
nrp_fabrics_write "$opts" && nrp_fail "connect to unregistered transport succeeded"
nrp_dmesg_since | grep -q "no handler found for transport $name" ||
	nrp_fail "nvme-fabrics did not report the unknown transport"

nrp_load transport=$name
nrp_dmesg_mark
out=$(nrp_fabrics_write "$opts") && nrp_fail "connect to 127.0.0.1 with no target succeeded"
echo "connect with the module loaded: $out"
nrp_dmesg_since | grep -q "no handler found for transport $name" &&
	nrp_fail "nvme-fabrics did not find the registered transport '$name'"
# rmmod, not modprobe -r: nvme-fabrics must stay to answer the next write
nrp_must rmmod $NRP_MOD

nrp_dmesg_mark
nrp_fabrics_write "$opts" && nrp_fail "connect succeeded after unload"
nrp_dmesg_since | grep -q "no handler found for transport $name" ||
	nrp_fail "transport '$name' still registered after unload"
nrp_pass
