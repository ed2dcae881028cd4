#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A delete that overtakes a reset while the core's scan is still running:
# reset_controller and, 0 to 20 ms later, delete_controller, written right
# after a connect to a subsystem of 24 namespaces, so that the scan is
# still sending Identify commands when the reset quiesces the admin
# queue. The core lets DELETING take over from RESETTING; the reset work
# then stops with the admin queue quiesced, and the delete waits for the
# scan (nvme_remove_namespaces()), whose Identify waited on that queue for
# ever: nrp_stop_ctrl() opens it. Before that fix the first round hung on
# stock 6.1; the in-tree nvme_rdma WARNs and hangs the same way. Each
# delete must return within 60 s (else the blocked tasks' stacks are
# printed and the test fails), the reset work must not WARN (6cc52ad), and
# nothing may be left behind. The test fails if no round met the race: a
# reset the delete cut short while the scan had not yet added every
# namespace. NRP_DELETE_ROUNDS rounds, default 20.
. "$(dirname "$0")/lib.sh"

rounds=${NRP_DELETE_ROUNDS:-20}
nr_ns=24
nrp_std_setup 64
nrp_cleanup_push nrp_disconnect_all
# namespaces 2..24: small files on tmpfs (buffered: tmpfs has no O_DIRECT);
# what they hold does not matter, only that the scan has many to add
cfs=/sys/kernel/config/nvmet/subsystems/$NRP_SUBNQN/namespaces
files=$(mktemp -d /dev/shm/nrp-ns.XXXXXX) || nrp_fail "no tmpfs directory for the namespaces"
nrp_cleanup_push "rm -rf $files"
for ((n = 2; n <= nr_ns; n++)); do
	truncate -s 4M "$files/$n" || nrp_fail "cannot make $files/$n"
	mkdir "$cfs/$n" || nrp_fail "cannot create namespace $n"
	nrp_cleanup_push "rmdir $cfs/$n"
	echo 1 >"$cfs/$n/buffered_io"
	echo "$files/$n" >"$cfs/$n/device_path"
	echo 1 >"$cfs/$n/enable" || nrp_fail "cannot enable namespace $n on $files/$n"
	nrp_cleanup_push "echo 0 >$cfs/$n/enable"
done
nrp_dmesg_mark
out=$(PYTHONPATH=$(dirname "$0") python3 - "$rounds" "$nr_ns" \
	"transport=$NRP_TRANSPORT,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nqn=$NRP_SUBNQN,nr_io_queues=2" <<'PY'
import glob, os, random, sys, threading, time
from fuzz_options import connect_ctrl
rounds, nr_ns, opts = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
rnd = random.Random(4242)

def write(path, res):
    try:
        with open(path, "w") as f:
            f.write("1")
        res.append(0)
    except OSError as e:
        res.append(e.errno)

def blocked():
    """The stacks of the tasks in D state, for the failure message."""
    out = []
    for p in glob.glob("/proc/[0-9]*"):
        try:
            st = open(p + "/stat").read()
            if st.rsplit(")", 1)[1].split()[0] != "D":
                continue
            out.append("task %s:\n%s" % (st.split(")")[0] + ")", open(p + "/stack").read()))
        except OSError:
            pass
    return "\n".join(out)

cut = raced = 0
for i in range(1, rounds + 1):
    name, _ = connect_ctrl(opts, "round %d" % i)
    ctrl = "/sys/class/nvme/" + name
    added = len(glob.glob(ctrl + "/nvme*n*"))
    reset_res, delete_res = [], []
    r = threading.Thread(target=write, args=(ctrl + "/reset_controller", reset_res), daemon=True)
    r.start()
    time.sleep(rnd.uniform(0, 0.02))
    d = threading.Thread(target=write, args=(ctrl + "/delete_controller", delete_res), daemon=True)
    d.start()
    d.join(60)
    r.join(60)
    if d.is_alive() or r.is_alive():
        msg = ("round %d: %s of %s still blocked after 60 s (%d of %d namespaces added at the reset)\n%s"
               % (i, "the delete" if d.is_alive() else "the reset", name, added, nr_ns, blocked()))
        print(msg)
        sys.stdout.flush()
        # the blocked writer keeps this test from ending, and its output
        # with it: the kernel log (the guest's console) gets it too
        with open("/dev/kmsg", "w") as k:
            for l in msg.splitlines():
                k.write("delete_during_reset: %s\n" % l)
                k.flush()
        os._exit(1)
    if delete_res[0]:
        sys.exit("round %d: deleting %s failed: %s" % (i, name, os.strerror(delete_res[0])))
    if os.path.exists(ctrl):
        sys.exit("round %d: %s still there after its delete returned" % (i, name))
    if reset_res[0]:
        cut += 1
        if added < nr_ns:
            raced += 1
print("%d resets overtaken by a delete 0-20 ms later; %d did not end live, %d of them before the scan had added all %d namespaces"
      % (rounds, cut, raced, nr_ns))
sys.exit(0 if raced else 2)
PY
)
rc=$?
echo "$out"
case $rc in
0) ;;
2) nrp_fail "no delete cut a reset short while the scan ran: the test did not test the race" ;;
*) nrp_fail "a reset overtaken by a delete did not finish (above)" ;;
esac
nrp_assert_no_splat
nrp_assert_no_ctrls
nrp_pass
