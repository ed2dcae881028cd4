#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write generated option strings to /dev/nvme-fabrics (test_fuzz_options.sh).

   fuzz_options.py COUNT SECONDS SEED TRANSPORT TRADDR TRSVCID SUBNQN

Each string is a valid connect line of our transport, mutated: keys
dropped, duplicated or unknown, values malformed, overlong, out of range,
empty, in odd encodings (high bytes, NUL, control characters), separators
doubled, the whole line beyond a page. A write that is accepted made a
controller, which is deleted again at once. Stops after COUNT strings or
SECONDS seconds, whichever comes first; prints a summary, one
"outcome count" a line, and exits 1 if a delete failed.
"""
import errno
import os
import random
import sys
import time

NUMERIC = ["queue_size", "nr_io_queues", "reconnect_delay", "ctrl_loss_tmo",
           "keep_alive_tmo", "nr_write_queues", "nr_poll_queues", "tos",
           "fast_io_fail_tmo"]
STRINGS = ["transport", "traddr", "trsvcid", "nqn", "hostnqn", "host_traddr",
           "host_iface", "hostid", "dhchap_secret", "dhchap_ctrl_secret"]
FLAGS = ["duplicate_connect", "disable_sqflow", "hdr_digest", "data_digest",
         "discovery"]
ODD_NUMBERS = ["0", "1", "-1", "2", "31", "32", "1024", "65535", "65536",
               "2147483647", "2147483648", "-2147483648", "4294967296",
               "99999999999999999999999", "0x10", "010", "1e3", " 5", "5 ",
               "+7", "--1", "", "abc", "0.5", "\u00b9", "\uff11"]
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"


def odd_string(rnd):
    kind = rnd.randrange(9)
    if kind == 0:
        return ""
    if kind == 1:
        return "A" * rnd.choice([223, 224, 255, 256, 1023, 4000])
    if kind == 2:
        return "".join(chr(rnd.randrange(0x80, 0x800)) for _ in range(rnd.randrange(1, 40)))
    if kind == 3:
        return "%41%00%ff" * rnd.randrange(1, 5)
    if kind == 4:
        return "x\ny\tz\rq"
    if kind == 5:
        return "\x00hidden"
    if kind == 6:
        return "=" * rnd.randrange(1, 9)
    if kind == 7:
        return rnd.choice(["::1", "fe80::1%lo", "[fd99::1]", "10.99.0.1:4420",
                           "10.99.0.256", "999.1.1.1", "1.2.3", "localhost",
                           "0.0.0.0", "255.255.255.255", "fd99::1%nosuch"])
    return "".join(chr(rnd.randrange(0x21, 0x7f)) for _ in range(rnd.randrange(1, 64)))


def mutate(rnd, base):
    opts = list(base)
    for _ in range(rnd.randrange(1, 4)):
        op = rnd.randrange(10)
        if op == 0 and opts:
            del opts[rnd.randrange(len(opts))]
        elif op == 1 and opts:
            opts.insert(rnd.randrange(len(opts) + 1), rnd.choice(opts))
        elif op == 2:
            opts.append((rnd.choice(["bogus", "traddr2", "queue-size", "QUEUE_SIZE",
                                     "nqn ", " nqn", odd_string(rnd)]), odd_string(rnd)))
        elif op == 3:
            opts.append((rnd.choice(NUMERIC), rnd.choice(ODD_NUMBERS)))
        elif op == 4:
            opts.append((rnd.choice(STRINGS), odd_string(rnd)))
        elif op == 5:
            opts.append((rnd.choice(FLAGS), None))
        elif op == 6:
            opts.append((rnd.choice(FLAGS), odd_string(rnd)))
        elif op == 7 and opts:
            i = rnd.randrange(len(opts))
            opts[i] = (opts[i][0], odd_string(rnd))
        elif op == 8:
            opts.append((rnd.choice(NUMERIC + STRINGS), None))
        else:
            opts.append(("", None))
    return opts


def render(rnd, opts):
    parts = [k if v is None else k + "=" + v for k, v in opts]
    sep = rnd.choice([",", ",", ",", ",,", ", ", ";", "\n"])
    line = sep.join(parts)
    if rnd.randrange(20) == 0:
        line = "," + line + ","
    data = line.encode("utf-8", "surrogatepass")
    if rnd.randrange(40) == 0:
        data += b"," + b"k" * rnd.choice([4096, 5000])
    if rnd.randrange(30) == 0:
        data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
    return data


def connect(data):
    fd = os.open("/dev/nvme-fabrics", os.O_RDWR)
    try:
        os.write(fd, data)
        return 0, os.read(fd, 256).decode(errors="replace")
    except OSError as e:
        return e.errno, ""
    finally:
        os.close(fd)


def instance_of(line):
    """The controller instance in a connect's reply line, or None."""
    inst = None
    for field in line.strip().split(","):
        if field.startswith("instance="):
            inst = field.split("=", 1)[1]
    return inst


def connect_ctrl(data, what):
    """Connect; the new controller's name (nvmeN) and the reply line.
    Exits naming WHAT (e.g. "round 3") when the connect fails or the
    reply names no instance."""
    err, line = connect(data)
    if err:
        sys.exit("%s: connect failed: %s" % (what, os.strerror(err)))
    inst = instance_of(line)
    if inst is None:
        sys.exit("%s: no instance in %r" % (what, line))
    return "nvme" + inst, line


def delete(line):
    inst = instance_of(line)
    if inst is None:
        return False
    try:
        with open("/sys/class/nvme/nvme%s/delete_controller" % inst, "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def main():
    count, secs, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    transport, traddr, trsvcid, nqn = sys.argv[4:8]
    rnd = random.Random(seed)
    base = [("transport", transport), ("traddr", traddr),
            ("trsvcid", trsvcid), ("nqn", nqn)]
    outcomes = {}
    failed_deletes = 0
    end = time.monotonic() + secs
    done = 0
    while done < count and time.monotonic() < end:
        b = list(base)
        if rnd.randrange(4) == 0:
            b[3] = ("nqn", DISCOVERY_NQN)
        # keep most strings off the target: a connect attempt costs seconds
        if rnd.randrange(25):
            b[1] = ("traddr", rnd.choice(["not-an-address", "10.99.0.1.1", "", "::g"]))
        if rnd.randrange(30) == 0:
            b[0] = ("transport", rnd.choice(["rdma", "tcp", "loop", "fc", "",
                                             transport.upper(), transport * 20]))
        data = render(rnd, mutate(rnd, b) if rnd.randrange(10) else b)
        err, line = connect(data)
        name = "accepted" if err == 0 else errno.errorcode.get(err, str(err))
        outcomes[name] = outcomes.get(name, 0) + 1
        if err == 0 and not delete(line):
            failed_deletes += 1
            print("could not delete the controller of %r: %r" % (data[:200], line))
        done += 1
    print("strings %d seed %d seconds %.0f" % (done, seed, secs - (end - time.monotonic())))
    for k in sorted(outcomes):
        print("%s %d" % (k, outcomes[k]))
    return 1 if failed_deletes else 0


if __name__ == "__main__":
    sys.exit(main())
