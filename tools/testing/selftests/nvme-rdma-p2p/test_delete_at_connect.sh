#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A controller deleted the moment its connect returns (a tool that
# writes to /dev/nvme-fabrics and deletes at once, as fuzz_options does),
# while the core's scan work may still be adding its namespace. The
# delete must not unbalance the namespace queue's quiesce count: on 6.12
# the core quiesces and unquiesces the whole tag set's list of queues,
# and blk-mq WARNs when a queue that joined in between is unquiesced
# without having been quiesced (nrp_stop_ctrl(); first seen in
# fuzz_options on 6.12 with 240 possible CPUs). NRP_DELETE_ROUNDS rounds
# (default 40) of a connect and an immediate delete; then no kernel
# report, nothing left behind (run_tests.sh checks the module's reference
# count after it).
. "$(dirname "$0")/lib.sh"

rounds=${NRP_DELETE_ROUNDS:-40}
nrp_std_setup 64
nrp_cleanup_push nrp_disconnect_all
nrp_dmesg_mark
# Each round writes the options to /dev/nvme-fabrics and deletes the new
# controller within microseconds, as the fuzzer did when it found this:
# nvme-cli's own connect reads sysfs back for long enough that the scan
# has finished. A round also notes whether the namespace's disk existed
# when the delete began (the scan had finished) or not.
# The connect and the delete are fuzz_options.py's own.
out=$(PYTHONPATH=$(dirname "$0") python3 - "$rounds" "transport=$NRP_TRANSPORT,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nqn=$NRP_SUBNQN,nr_io_queues=2,nr_write_queues=2" <<'PY'
import glob, os, sys
from fuzz_options import connect_ctrl, delete
rounds, opts = int(sys.argv[1]), sys.argv[2].encode()
early = 0
for i in range(1, rounds + 1):
    name, line = connect_ctrl(opts, "round %d" % i)
    ctrl = "/sys/class/nvme/" + name
    if not glob.glob(ctrl + "/nvme*n1"):
        early += 1
    if not delete(line):
        sys.exit("round %d: deleting %s failed" % (i, name))
    if os.path.exists(ctrl):
        sys.exit("round %d: %s still there after its delete returned" % (i, name))
print("%d connects each deleted at once; %d before the namespace was added" % (rounds, early))
# the race needs deletes that come before the scan has added the namespace
if not early:
    sys.exit("no delete came before the namespace was added: the test did not test the race")
PY
) || nrp_fail "$out"
echo "$out"
nrp_assert_no_splat
nrp_assert_no_ctrls
nrp_pass
