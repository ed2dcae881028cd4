#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check on fake hosts (sysfs, debugfs, /proc and /boot trees
# built here, read through its hidden --root), for what no guest can
# show and for its output format:
#  - the exit status (0 ready, 1 not ready or not confirmed, 2 bad
#    arguments), the JSON (every fact with an id, a verdict of the five,
#    a detail, a fix when it fails) and the text report (sections, a fix
#    line under each failing fact only, the summary line);
#  - the P2PDMA core's decision, mirrored: a switch with and without ACS
#    redirection, the host bridge whitelist (an entry that needs both
#    peers below one host bridge, a root-port entry), AMD Zen, ACS that
#    cannot be read (not root), a kernel series whose whitelist it does
#    not know, IOMMU domains (translated, blocked);
#  - a stock kernel, soft RDMA with and without allow_soft_p2p, a
#    multipath head whose mark does not show, a 6.12 controller disk;
#  - multipath heads as nvme-rdma-p2p marks them (its debugfs heads):
#    marked (6.1, 6.12); not marked with an in-tree nvme_rdma controller
#    or one of its own that cannot carry P2P in the subsystem, named in
#    the fix; a mark that sysfs or a path's queue flag contradicts;
#    without debugfs, a controller of another transport still decides;
#  - a module not loaded, installed or not.
# The guests check the same verdicts against the kernel itself
# (test_nrp_check_*.sh).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || fail "python3 missing"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
NRP_CHECK=$TOP/tools/nrp-check python3 - "$work" <<'PY' || fail "see above"
import json
import os
import struct
import subprocess
import sys

CHECK = os.environ["NRP_CHECK"]
WORK = sys.argv[1]
VERDICTS = {"ok", "fail", "warn", "unknown", "info"}
n_cases = 0


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def config(pcie_type=None, acs=None, size=4096):
    """Config space: a PCIe capability of @pcie_type at 0x40, an ACS
    capability at 0x100 whose control register is @acs, @size bytes as
    the reader may see them (64 for non-root, 256 without ECAM)."""
    c = bytearray(4096)
    if pcie_type is not None:
        c[6] = 0x10                 # capability list
        c[0x34] = 0x40
        c[0x40] = 0x10              # PCI Express
        c[0x41] = 0
        struct.pack_into("<H", c, 0x42, 2 | (pcie_type << 4))
    if acs is not None:
        struct.pack_into("<I", c, 0x100, 0x000D | (1 << 16))
        struct.pack_into("<HH", c, 0x104, 0x5F, acs)
    return bytes(c[:size])


class Host:
    def __init__(self, name, release="6.1.0-99-amd64", p2pdma=True, cpu=("GenuineIntel", 6)):
        self.r = os.path.join(WORK, name)
        self.release = release
        os.makedirs(self.r)
        self.file("/proc/sys/kernel/osrelease", release + "\n")
        self.file("/proc/cmdline", "root=/dev/sda1 ro quiet\n")
        self.file("/boot/config-" + release,
                  "CONFIG_PCI_P2PDMA=y\n" if p2pdma else "# CONFIG_PCI_P2PDMA is not set\n")
        self.file("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\n" % cpu)
        for d in ("/sys/bus/pci/devices", "/sys/class/infiniband", "/sys/class/nvme",
                  "/sys/module"):
            os.makedirs(self.r + d, exist_ok=True)
        self.hb("pci0000:00", 0x8086, 0x29C0)

    def file(self, path, content):
        p = self.r + path
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)

    def link(self, path, target):
        p = self.r + path
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink(os.path.relpath(self.r + target, os.path.dirname(p)), p)

    def hb(self, name, vendor, device, first="00.0", pcie_type=None):
        """A host bridge and the first device on its root bus."""
        bus = name[3:]
        self.dev("/sys/devices/%s/%s:%s" % (name, bus, first), vendor, device, 0x060000,
                 config(pcie_type))

    def dev(self, path, vendor, device, cls, cfg=None, driver=None, iommu=None):
        bdf = os.path.basename(path)
        self.file(path + "/vendor", "0x%04x\n" % vendor)
        self.file(path + "/device", "0x%04x\n" % device)
        self.file(path + "/class", "0x%06x\n" % cls)
        self.file(path + "/config", cfg if cfg is not None else config(0))
        if driver:
            self.link(path + "/driver", "/sys/bus/pci/drivers/" + driver)
            os.makedirs(self.r + "/sys/bus/pci/drivers/" + driver, exist_ok=True)
        if iommu:
            g, t = iommu
            self.file("/sys/kernel/iommu_groups/%s/type" % g, t + "\n")
            self.link(path + "/iommu_group", "/sys/kernel/iommu_groups/%s" % g)
        self.link("/sys/bus/pci/devices/" + bdf, path)
        return path

    def p2pmem(self, path, size, avail, published=True):
        self.file(path + "/p2pmem/size", "%d\n" % size)
        self.file(path + "/p2pmem/available", "%d\n" % avail)
        self.file(path + "/p2pmem/published", "1\n" if published else "0\n")

    def module(self, p2p="available", allow="N", transport="rdma"):
        m = "/sys/module/nvme_rdma_p2p"
        self.file(m + "/initstate", "live\n")
        self.file(m + "/parameters/p2p", p2p + "\n")
        self.file(m + "/parameters/allow_soft_p2p", allow + "\n")
        self.file(m + "/parameters/transport", transport + "\n")
        os.makedirs(self.r + "/sys/kernel/debug/nvme-rdma-p2p", exist_ok=True)

    def multipath(self, v):
        self.file("/sys/module/nvme_core/parameters/multipath", v + "\n")

    def hca(self, name, pci_path):
        self.link("/sys/class/infiniband/%s/device" % name, pci_path)
        self.file("/sys/class/infiniband/%s/node_type" % name, "1: CA\n")

    def rxe(self, name, netdev):
        self.file("/sys/class/infiniband/%s/parent" % name, netdev + "\n")
        self.file("/sys/class/infiniband/%s/node_type" % name, "1: CA\n")

    def ctrl(self, name, capable=1, transport="rdma", ours=True):
        c = "/sys/class/nvme/" + name
        self.file(c + "/transport", transport + "\n")
        self.file(c + "/state", "live\n")
        self.file(c + "/address", "traddr=192.168.10.1,trsvcid=4420\n")
        if ours:
            self.file("/sys/kernel/debug/nvme-rdma-p2p/%s/stats" % name,
                      "commands 7\np2p_bytes_mapped 0\np2p_capable %d\n" % capable)

    def disk(self, ctrl, disk, nsid=1, state=None, head=None, head_state=None):
        self.file("/sys/block/%s/nsid" % disk, "%d\n" % nsid)
        os.makedirs(self.r + "/sys/class/nvme/%s/%s" % (ctrl, disk), exist_ok=True)
        dbg = "/sys/kernel/debug/block/" + disk
        os.makedirs(self.r + dbg, exist_ok=True)
        if state is not None:
            self.file(dbg + "/state", state + "\n")
        if head:
            s = "/sys/class/nvme-subsystem/nvme-subsys0"
            os.makedirs(self.r + s + "/" + ctrl, exist_ok=True)
            os.makedirs(self.r + s + "/" + head, exist_ok=True)
            self.file("/sys/block/%s/nsid" % head, "%d\n" % nsid)
            os.makedirs(self.r + "/sys/kernel/debug/block/" + head, exist_ok=True)
            if head_state is not None:
                self.file("/sys/kernel/debug/block/%s/state" % head, head_state + "\n")

    def run(self, *args, want_rc=None):
        """nrp-check --json and the text report; both must agree."""
        global n_cases
        n_cases += 1
        cmd = [CHECK, "--root", self.r] + list(args)
        j = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
        t = subprocess.run(cmd, capture_output=True, text=True)
        if j.returncode != t.returncode:
            die("%s: --json exits %d, text %d" % (self.r, j.returncode, t.returncode))
        if j.stderr or t.stderr:
            die("%s: stderr: %s%s" % (self.r, j.stderr, t.stderr))
        try:
            out = json.loads(j.stdout)
        except ValueError as e:
            die("%s: not JSON (%s): %s" % (self.r, e, j.stdout[:300]))
        check_format(self.r, out, t.stdout, j.returncode)
        if want_rc is not None and j.returncode != want_rc:
            die("%s: exit %d, wanted %d:\n%s" % (self.r, j.returncode, want_rc, t.stdout))
        return Result(self.r, out, t.stdout)


class Result:
    def __init__(self, where, j, text):
        self.where, self.j, self.text = where, j, text
        self.by_id = {f["id"]: f for f in j["facts"]}

    def fact(self, fid):
        if fid not in self.by_id:
            die("%s: no fact %s in %s\n%s" % (self.where, fid, sorted(self.by_id), self.text))
        return self.by_id[fid]

    def expect(self, fid, verdict, detail=None, fix=None, **data):
        f = self.fact(fid)
        if f["verdict"] != verdict:
            die("%s: %s is %s, wanted %s: %s\n%s" % (self.where, fid, f["verdict"], verdict,
                                                      f["detail"], self.text))
        if detail and detail not in f["detail"] + " ".join(f["notes"]):
            die("%s: %s does not say '%s': %s %s" % (self.where, fid, detail, f["detail"], f["notes"]))
        if fix and (not f["fix"] or fix not in f["fix"]):
            die("%s: %s's fix lacks '%s': %s" % (self.where, fid, fix, f["fix"]))
        for k, v in data.items():
            if f["data"].get(k) != v:
                die("%s: %s: %s is %r, wanted %r" % (self.where, fid, k, f["data"].get(k), v))
        return f

    def result(self, want, reason=None):
        if self.j["result"] != want:
            die("%s: result %s, wanted %s\n%s" % (self.where, self.j["result"], want, self.text))
        if reason and not any(reason in r for r in self.j["reasons"] + self.j["unknown"]):
            die("%s: no reason says '%s': %s" % (self.where, reason, self.j["reasons"] + self.j["unknown"]))


def check_format(where, j, text, rc):
    for k in ("nrp_check", "kernel", "result", "ready", "reasons", "unknown", "namespaces", "facts"):
        if k not in j:
            die("%s: JSON lacks '%s'" % (where, k))
    if j["result"] not in ("ready", "not ready", "cannot confirm"):
        die("%s: result '%s'" % (where, j["result"]))
    if j["ready"] != (rc == 0) or j["ready"] != (j["result"] == "ready"):
        die("%s: ready %s, result %s, exit %d disagree" % (where, j["ready"], j["result"], rc))
    ids = set()
    for f in j["facts"]:
        for k in ("id", "section", "subject", "verdict", "detail", "fix", "notes", "data"):
            if k not in f:
                die("%s: fact %s lacks '%s'" % (where, f.get("id"), k))
        if f["id"] in ids:
            die("%s: fact %s twice" % (where, f["id"]))
        ids.add(f["id"])
        if f["verdict"] not in VERDICTS:
            die("%s: %s: verdict %s" % (where, f["id"], f["verdict"]))
        if f["verdict"] == "fail" and not f["fix"]:
            die("%s: %s fails without a fix" % (where, f["id"]))
        if f["section"] not in text:
            die("%s: the text report has no section '%s'" % (where, f["section"]))
    # the text: one fix line under each failing, warning or unknown fact
    # that has one, none under the others
    lines = text.split("\n")
    shown = {"ok": "ok", "fail": "FAIL", "warn": "warn", "unknown": "unknown", "info": "info"}
    i = 0
    for f in j["facts"]:
        while i < len(lines) and not (lines[i].split()[:1] == [shown[f["verdict"]]] and
                                      f["subject"] in lines[i]):
            i += 1
        if i == len(lines):
            die("%s: fact %s (%s) not in the text report in order:\n%s" % (where, f["id"], f["subject"], text))
        k = i + 1
        fixes = []
        while k < len(lines) and lines[k].startswith("  ") and not lines[k][2:9].strip():
            if lines[k].strip().startswith("fix: "):
                fixes.append(lines[k].strip())
            k += 1
        want = 1 if f["fix"] and f["verdict"] in ("fail", "warn", "unknown") else 0
        if len(fixes) != want:
            die("%s: %s: %d fix lines under it, wanted %d" % (where, f["id"], len(fixes), want))
        i = k
    last = {"ready": "READY:", "not ready": "NOT READY:", "cannot confirm": "CANNOT CONFIRM:"}[j["result"]]
    if last not in text:
        die("%s: the text report has no '%s' summary" % (where, last))


# A host that can do it: a GPU and an HCA below one PCIe switch, our
# module, a controller with its own disk whose queue has the flag.
def switch_host(name, dsp_acs=None, cpu=("GenuineIntel", 6), release="6.1.0-99-amd64",
                cfg_size=4096, iommu=None):
    h = Host(name, release=release, cpu=cpu)
    rp = h.dev("/sys/devices/pci0000:00/0000:00:01.0", 0x8086, 0x1234, 0x060400, config(4, 0, cfg_size))
    usp = h.dev(rp + "/0000:01:00.0", 0x10B5, 0x8747, 0x060400, config(5, None, cfg_size))
    d0 = h.dev(usp + "/0000:02:00.0", 0x10B5, 0x8747, 0x060400, config(6, dsp_acs, cfg_size))
    d1 = h.dev(usp + "/0000:02:01.0", 0x10B5, 0x8747, 0x060400, config(6, dsp_acs, cfg_size))
    gpu = h.dev(d0 + "/0000:03:00.0", 0x10DE, 0x20B0, 0x030200, config(0, None, cfg_size), "nvidia",
                iommu=(("5", iommu) if iommu else None))
    hca = h.dev(d1 + "/0000:04:00.0", 0x15B3, 0x101B, 0x020700, config(0, None, cfg_size), "mlx5_core",
                iommu=(("6", iommu) if iommu else None))
    h.p2pmem(gpu, 16 << 30, 0)
    h.hca("mlx5_0", hca)
    h.module()
    h.multipath("N")
    h.ctrl("nvme0", 1)
    h.disk("nvme0", "nvme0n1", state="SAME_COMP|NONROT|IO_STAT|INIT_DONE|POLL|PCI_P2PDMA|NOWAIT")
    return h


PAIR = "pair:0000:03:00.0:mlx5_0"

# --- ready, and the switch's ACS
r = switch_host("ready").run(want_rc=0)
r.result("ready")
r.expect("kernel.p2pdma", "ok", "CONFIG_PCI_P2PDMA=y")
r.expect(PAIR, "ok", "below one PCIe switch", decision="bus_address", distance=4,
         common_upstream="0000:01:00.0", acs_redirect=[])
r.expect("namespace:nvme0n1", "ok", "debugfs block/nvme0n1/state", p2pdma=True)
r.expect("controller:nvme0", "ok", "p2p_capable 1")
r.expect("provider:0000:03:00.0", "ok", "16.0 GiB registered", published=True)
if r.j["namespaces"] != ["nvme0n1"]:
    die("ready: namespaces %s" % r.j["namespaces"])
if "READY: a P2P checkpoint can work through nvme0n1" not in r.text:
    die("ready: summary line:\n" + r.text)

r = switch_host("acs", dsp_acs=0x1D).run(want_rc=1)
r.result("not ready", "no provider and RDMA device pair")
f = r.expect(PAIR, "fail", "ACS redirects at 0000:02:00.0(RR,CR) 0000:02:01.0(RR,CR)",
             fix="pci=disable_acs_redir=0000:02:00.0;0000:02:01.0", decision="refused",
             kernel_decision="refused")
if "host bridge 8086:29c0 is not on the kernel's P2PDMA whitelist" not in f["data"]["why"]:
    die("acs: why: " + f["data"]["why"])
# source validation and egress control count, translation blocking alone does not
r = switch_host("acs-ec", dsp_acs=0x20).run(want_rc=1)
r.expect(PAIR, "fail", "(EC)", decision="refused")
r = switch_host("acs-sv", dsp_acs=0x13).run(want_rc=0)
r.expect(PAIR, "ok", decision="bus_address")

# through the host bridge: AMD Zen, or a whitelisted host bridge
r = switch_host("acs-zen", dsp_acs=0x1D, cpu=("AuthenticAMD", 0x19)).run(want_rc=0)
r.expect(PAIR, "ok", "AMD Zen", decision="host_bridge", distance=4)
r.expect("kernel.cpu", "info", "AMD Zen or later", amd_zen=True)
r = switch_host("acs-oldamd", dsp_acs=0x1D, cpu=("AuthenticAMD", 0x15)).run(want_rc=1)
r.expect(PAIR, "fail", decision="refused")
h = switch_host("acs-whitelisted", dsp_acs=0x1D)
os.remove(h.r + "/sys/devices/pci0000:00/0000:00:00.0/device")
h.file("/sys/devices/pci0000:00/0000:00:00.0/device", "0x2020\n")
r = h.run(want_rc=0)
r.expect(PAIR, "ok", "host bridge 8086:2020 is on the kernel's P2PDMA whitelist", decision="host_bridge")

# ACS out of reach: config space of 64 bytes, as a non-root reader sees it
r = switch_host("acs-noroot", cfg_size=64).run(want_rc=1)
r.result("cannot confirm", "no provider and RDMA device pair confirmed")
r.expect(PAIR, "unknown", "needs root", decision="unknown")
# without extended config space (no ECAM) the kernel sees no ACS either
r = switch_host("acs-noecam", dsp_acs=0x1D, cfg_size=256).run(want_rc=0)
r.expect(PAIR, "ok", "none on the way", decision="bus_address")

# IOMMU: translation is no obstacle, a device held by VFIO is
r = switch_host("iommu-dma", iommu="DMA-FQ").run(want_rc=0)
r.expect("kernel.iommu", "info", "translating (DMA-FQ)", mode="translated")
r.expect(PAIR, "ok", "IOMMU: provider DMA-FQ, client DMA-FQ")
r = switch_host("iommu-pt", iommu="identity").run(want_rc=0)
r.expect("kernel.iommu", "info", mode="passthrough")
r = switch_host("iommu-vfio", iommu="unmanaged").run(want_rc=1)
r.expect(PAIR, "fail", fix="bind it to its kernel driver", kernel_decision="refused")


# two host bridges: an entry that needs one host bridge, a root-port entry
def two_bridges(name, dev_a, dev_b, first="00.0", pcie=None, release="6.1.0-99-amd64", vendor=0x8086):
    h = Host(name, release=release)
    for hb, dev in (("pci0000:00", dev_a), ("pci0000:80", dev_b)):
        os.system("rm -rf %s/sys/devices/%s" % (h.r, hb))
        for b in os.listdir(h.r + "/sys/bus/pci/devices"):
            if b.startswith(hb[3:] + ":"):
                os.remove(h.r + "/sys/bus/pci/devices/" + b)
        h.hb(hb, vendor, dev, first=first, pcie_type=pcie)
    rp_a = h.dev("/sys/devices/pci0000:00/0000:00:03.0", 0x8086, 0x1111, 0x060400, config(4, 0))
    rp_b = h.dev("/sys/devices/pci0000:80/0000:80:03.0", 0x8086, 0x1111, 0x060400, config(4, 0))
    gpu = h.dev(rp_a + "/0000:17:00.0", 0x10DE, 0x20B0, 0x030200, config(0), "nvidia")
    hca = h.dev(rp_b + "/0000:98:00.0", 0x15B3, 0x101B, 0x020700, config(0), "mlx5_core")
    h.p2pmem(gpu, 1 << 30, 1 << 29)
    h.hca("mlx5_0", hca)
    h.module()
    h.multipath("N")
    return h


P2 = "pair:0000:17:00.0:mlx5_0"
r = two_bridges("hb-same-only", 0x3C00, 0x3C00).run(want_rc=1)
r.expect(P2, "fail", "across host bridges pci0000:00 and pci0000:80",
         decision="refused", distance=4)
if "whitelisted only for peers below it alone" not in r.fact(P2)["data"]["why"]:
    die("hb-same-only: " + r.fact(P2)["data"]["why"])
r = two_bridges("hb-rootport", 0x2030, 0x2031, first="02.0", pcie=4).run(want_rc=0)
r.result("ready")
r.expect(P2, "ok", decision="host_bridge")
r.expect("controllers", "info", "no NVMe-oF RDMA controller")
if "no controller connected yet" not in r.text:
    die("hb-rootport: the summary does not say that no controller is connected")
r = two_bridges("hb-first-not-rp", 0x2030, 0x2031, first="02.0", pcie=0).run(want_rc=1)
r.expect(P2, "fail", decision="refused")
r = two_bridges("hb-series", 0x1234, 0x1234, release="6.6.0-1-amd64").run(want_rc=1)
r.result("cannot confirm")
r.expect(P2, "unknown", decision="unknown")
if "nrp-check knows the lists of 6.1 and 6.12 and 7.3" not in r.fact(P2)["data"]["why"]:
    die("hb-series: " + r.fact(P2)["data"]["why"])
# 7.3's list: any Google device, Intel's QAT 4xxx; the 6.x list still
# holds there, and a 7.3-only entry is no entry on 6.12
for name, ids, rel, rc, verdict in (
        ("hb-73-google", (0x1AE0, 0x0042), "7.3.4+deb13-amd64", 0, "ok"),
        ("hb-73-qat", (0x8086, 0x4940), "7.3.4+deb13-amd64", 0, "ok"),
        ("hb-73-skx", (0x8086, 0x2030), "7.3.4+deb13-amd64", 0, "ok"),
        ("hb-73-i440fx", (0x8086, 0x1237), "7.3.4+deb13-amd64", 1, "fail"),
        ("hb-612-qat", (0x8086, 0x4940), "6.12.118+deb13-amd64", 1, "fail")):
    r = two_bridges(name, ids[1], ids[1], release=rel, vendor=ids[0]).run(want_rc=rc)
    r.expect(P2, verdict, decision="host_bridge" if verdict == "ok" else "refused")

# --- Debian 13's stock 7.3 (trixie-backports), which has P2PDMA: ready,
# and it says that no custom kernel is needed; a kernel of ours is not
# called stock
for rel, stock in (("7.3.4+deb13-amd64", True), ("6.12.118-nrp", False)):
    h = switch_host("bpo-" + rel, release=rel)
    h.file("/etc/debian_version", "13.2\n")
    r = h.run("--provider", "03:00.0", want_rc=0)
    said = "no custom kernel is needed" in r.text
    if said != stock:
        die("%s: 'no custom kernel is needed' %s:\n%s" % (rel, "missing" if stock else "said", r.text))
    if stock:
        r.expect("kernel.p2pdma", "ok", "Debian's stock kernel 7.3.4+deb13-amd64 has it built in")
        if "READY" not in r.text.splitlines()[-2]:
            die("%s: not READY:\n%s" % (rel, r.text))

# --- a stock kernel: no P2PDMA, says why, whatever else is right
h = switch_host("stock")
h.file("/boot/config-6.1.0-99-amd64", "# CONFIG_PCI_P2PDMA is not set\n")
os.system("rm -rf %s/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0/p2pmem" % h.r)
h.file("/sys/module/nvme_rdma_p2p/parameters/p2p", "unavailable: kernel built without CONFIG_PCI_P2PDMA\n")
r = h.run("--provider", "03:00.0", want_rc=1)
r.result("not ready", "CONFIG_PCI_P2PDMA")
r.expect("kernel.p2pdma", "fail", "parameters/p2p: unavailable", fix="CONFIG_PCI_P2PDMA=y")
r.expect("module.p2p", "fail", "unavailable: kernel built without CONFIG_PCI_P2PDMA")
r.expect("provider:0000:03:00.0", "fail", "no P2PDMA memory registered", registered=False)
r.expect(PAIR, "fail", "refused, no P2PDMA (the topology allows: peer bus address)", decision="bus_address", kernel_decision="refused")
# the fix names the stock kernel that has P2PDMA, where the host's Debian
# ships one: Debian 13's trixie-backports kernel; Debian 12 has none
for deb, want in (("12.12", "no Debian 12 kernel has it; Debian 13's trixie-backports kernel does"),
                  ("13.2", "apt install -t trixie-backports linux-image-amd64"),
                  (None, "boot a kernel built with CONFIG_PCI_P2PDMA=y (admin guide")):
    if deb:
        h.file("/etc/debian_version", deb + "\n")
    elif os.path.exists(h.r + "/etc/debian_version"):
        os.remove(h.r + "/etc/debian_version")
    r = h.run("--provider", "03:00.0", want_rc=1)
    r.expect("kernel.p2pdma", "fail", fix=want)
    if want not in r.text:
        die("stock, Debian %s: the report's fix line lacks '%s':\n%s" % (deb, want, r.text))
os.remove(h.r + "/sys/module/nvme_rdma_p2p/parameters/p2p")
os.system("rm -rf %s/sys/module/nvme_rdma_p2p" % h.r)
r = h.run(want_rc=1)
r.expect("kernel.p2pdma", "fail", "/boot/config-6.1.0-99-amd64")
r.expect("module.loaded", "fail", "not installed", fix="nvme-rdma-p2p-dkms")
r.expect("providers", "fail", "(this kernel cannot)")
h.file("/lib/modules/6.1.0-99-amd64/modules.dep", "kernel/x.ko:\nupdates/dkms/nvme-rdma-p2p.ko.xz: kernel/y.ko\n")
r = h.run(want_rc=1)
r.expect("module.loaded", "fail", "installed: updates/dkms/nvme-rdma-p2p.ko.xz", fix="modprobe nvme-rdma-p2p")

# --- soft RDMA: allow_soft_p2p decides
def soft_host(name, allow, release=None):
    h = Host(name, release=release) if release else Host(name)
    gpu = h.dev("/sys/devices/pci0000:00/0000:00:04.0", 0x1AF4, 0x1110, 0x050000, config(None, None, 256), "nrp_gpu")
    h.p2pmem(gpu, 2 << 30, 0)
    nic = h.dev("/sys/devices/pci0000:00/0000:00:03.0", 0x8086, 0x100E, 0x020000, config(None, None, 256), "e1000")
    h.link("/sys/class/net/eth0/device", nic)
    h.rxe("rxe0", "eth0")
    h.module(allow=allow, transport="rdma_p2p")
    h.multipath("N")
    h.ctrl("nvme1", 1 if allow == "Y" else 0, transport="rdma_p2p")
    h.disk("nvme1", "nvme1n1")  # no debugfs state: CONFIG_BLK_DEBUG_FS off
    os.rmdir(h.r + "/sys/kernel/debug/block/nvme1n1")
    return h


r = soft_host("soft-n", "N").run(want_rc=1)
r.result("not ready")
r.expect("module.allow_soft_p2p", "fail", "the only RDMA devices are soft (rxe0)", fix="allow_soft_p2p=1")
r.expect("rdma:rxe0", "info", "eth0 is PCI 0000:00:03.0, which never sees the P2P memory",
         soft="rxe", netdev_pci="0000:00:03.0")
r.expect("pair:0000:00:04.0:rxe0", "fail", "allow_soft_p2p=N", kernel_decision="soft")
r.expect("controller:nvme1", "fail", "p2p_capable 0", fix="allow_soft_p2p=1")
r.expect("namespace:nvme1n1", "fail", "inferred from nvme1's p2p_capable 0", p2pdma=False)
r = soft_host("soft-y", "Y").run(want_rc=0)
r.expect("module.allow_soft_p2p", "ok", value=True)
r.expect("pair:0000:00:04.0:rxe0", "ok", "allow_soft_p2p=Y")
r.expect("namespace:nvme1n1", "ok", "CONFIG_BLK_DEBUG_FS off", p2pdma=True)

# an in-tree nvme_rdma controller never carries P2P
h = soft_host("intree", "Y")
h.ctrl("nvme2", transport="rdma", ours=False)
h.disk("nvme2", "nvme2n1")
r = h.run(want_rc=0)
r.expect("controller:nvme2", "fail", fix="-t rdma_p2p", ours=False)
r.expect("namespace:nvme2n1", "fail", "the in-tree nvme_rdma never advertises P2PDMA")
# from 7.1 it does where its RDMA device can DMA to a peer: a device
# nrp-check cannot name (not root) leaves it a warning, its disk unknown
h = soft_host("intree-7.3", "Y", release="7.3.4+deb13-amd64")
h.ctrl("nvme2", transport="rdma", ours=False)
h.disk("nvme2", "nvme2n1")
r = h.run()
r.expect("controller:nvme2", "warn", fix="nvme-rdma-p2p never counts it as a P2P path of a multipath head",
         ours=False)
r.expect("namespace:nvme2n1", "unknown")

# --- multipath: a head whose flag Linux 6.1 does not show
h = soft_host("head", "Y")
h.multipath("Y")
os.system("rm -rf %s/sys/class/nvme/nvme1/nvme1n1 %s/sys/block/nvme1n1" % (h.r, h.r))
h.disk("nvme1", "nvme1c1n1", state="NONROT|IO_STAT|PCI_P2PDMA", head="nvme1n1")
r = h.run(want_rc=1)
r.result("cannot confirm", "nvme1n1")
f = r.expect("namespace:nvme1n1", "unknown", "does not show a multipath head's P2PDMA flag",
             fix="nvme_core.multipath=N", head=True, p2pdma=None)
if not any("path nvme1c1n1 of nvme1: takes P2P pages" in n for n in f["notes"]):
    die("head: the path's flag is not shown: %s" % f["notes"])
r.expect("nvme_core.multipath", "warn", "nvme1n1", fix="nvme_core.multipath=N")
h.file("/sys/kernel/debug/block/nvme1n1/state", "NONROT|NOWAIT\n")  # if it ever showed
r = h.run(want_rc=1)
r.result("not ready")
r.expect("namespace:nvme1n1", "fail", p2pdma=False)
r.expect("nvme_core.multipath", "fail", fix="nvme_core.multipath=N")


# --- multipath: the module's marks (debugfs heads), checked against sysfs
def head_host(name, mark, release="6.1.0-99-amd64", path_state="NONROT|IO_STAT|PCI_P2PDMA"):
    h = soft_host(name, "Y")
    if release != h.release:
        os.remove(h.r + "/proc/sys/kernel/osrelease")
        h.file("/proc/sys/kernel/osrelease", release + "\n")
        h.file("/boot/config-" + release, "CONFIG_PCI_P2PDMA=y\n")
    h.multipath("Y")
    os.system("rm -rf %s/sys/class/nvme/nvme1/nvme1n1 %s/sys/block/nvme1n1" % (h.r, h.r))
    h.disk("nvme1", "nvme1c1n1", state=path_state, head="nvme1n1")
    h.file("/sys/class/nvme-subsystem/nvme-subsys0/subsysnqn", "nqn.test:sub\n")
    if mark is not None:
        h.file("/sys/kernel/debug/nvme-rdma-p2p/heads", "nvme1n1 nvme1 path nvme1c1n1 p2p %d\n" % mark)
    return h


r = head_host("head-marked", 1).run(want_rc=0)
r.result("ready")
r.expect("namespace:nvme1n1", "ok", "marked by nvme-rdma-p2p: debugfs heads p2p 1", head=True,
         p2pdma=True, marked=True, blockers=[], inconsistent=[], subsysnqn="nqn.test:sub")
r.expect("nvme_core.multipath", "ok", "Y: the multipath heads take P2P pages (nvme1n1)")
if r.j["namespaces"] != ["nvme1n1"]:
    die("head-marked: namespaces %s" % r.j["namespaces"])
r = head_host("head-marked-612", 1, release="6.12.99+deb12-amd64", path_state=None).run(want_rc=0)
r.expect("namespace:nvme1n1", "ok", "debugfs heads p2p 1", p2pdma=True)
if not any("inferred from nvme1's p2p_capable 1" in n for n in r.fact("namespace:nvme1n1")["notes"]):
    die("head-marked-612: the path's flag: %s" % r.fact("namespace:nvme1n1")["notes"])

# an in-tree nvme_rdma controller of the same subsystem: not marked, named
h = head_host("head-intree", 0)
h.ctrl("nvme2", transport="rdma", ours=False)
h.disk("nvme2", "nvme1c2n1", state="NONROT|IO_STAT", head="nvme1n1")
r = h.run(want_rc=1)
r.result("not ready", "nvme2 (in-tree nvme_rdma)")
f = r.expect("namespace:nvme1n1", "fail",
             "not marked by nvme-rdma-p2p: debugfs heads p2p 0; in its subsystem: nvme2 (in-tree nvme_rdma)",
             fix="disconnect nvme2 (connect through -t rdma_p2p instead)", p2pdma=False, marked=False)
if [b["controller"] for b in f["data"]["blockers"]] != ["nvme2"]:
    die("head-intree: blockers %s" % f["data"]["blockers"])
if not any("path nvme1c2n1 of nvme2: does not take P2P pages (debugfs block/nvme1c2n1/state)" in n
           for n in f["notes"]):
    die("head-intree: the in-tree path: %s" % f["notes"])
r.expect("nvme_core.multipath", "fail", "nvme1n1", fix="every controller of a head's subsystem")
# ... which nvme-rdma-p2p never marks: a mark would be wrong, and is said to be
h.file("/sys/kernel/debug/nvme-rdma-p2p/heads", "nvme1n1 nvme1 path nvme1c1n1 p2p 1\n")
r = h.run(want_rc=1)
r.result("not ready")
r.expect("namespace:nvme1n1", "fail", "but nvme2 (in-tree nvme_rdma) is in its subsystem",
         fix="report this", p2pdma=True, marked=True)
# without debugfs (not root): a controller of another transport still says no
os.system("rm -rf %s/sys/kernel/debug" % h.r)
r = h.run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "never marks a head with a controller of another transport",
         fix="disconnect nvme2", p2pdma=False, marked=None)
# a controller of ours that cannot carry P2P, in the same subsystem
h = head_host("head-weak", 0)
h.ctrl("nvme3", 0, transport="rdma_p2p")
h.disk("nvme3", "nvme1c3n1", state="NONROT|IO_STAT", head="nvme1n1")
r = h.run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "nvme3 (nvme-rdma-p2p, p2p_capable 0)", fix="fix or disconnect nvme3")
# not marked, and nothing in sysfs says why: a decision under way
r = head_host("head-deciding", 0).run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "nvme-rdma-p2p may still be deciding", blockers=[])
# marked, but the kernel shows a path whose queue flag is off
r = head_host("head-path-off", 1, path_state="NONROT|IO_STAT").run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "path nvme1c1n1 of nvme1: the kernel's queue flag is off",
         fix="report this", inconsistent=["path nvme1c1n1 of nvme1: the kernel's queue flag is off"])
# a kernel without P2PDMA: the module marks no head, and the fix says why
h = head_host("head-stock", 0)
h.file("/boot/config-6.1.0-99-amd64", "# CONFIG_PCI_P2PDMA is not set\n")
h.file("/sys/module/nvme_rdma_p2p/parameters/p2p", "unavailable: kernel built without CONFIG_PCI_P2PDMA\n")
r = h.run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "debugfs heads p2p 0", fix="CONFIG_PCI_P2PDMA=y")
if any("may still be deciding" in n for n in r.fact("namespace:nvme1n1")["notes"]):
    die("head-stock: a kernel without P2PDMA is not 'still deciding'")
# the module lists no path of its own under the head: the 6.1 core never marks it
h = head_host("head-unlisted", None)
h.file("/sys/kernel/debug/nvme-rdma-p2p/heads", "")
r = h.run(want_rc=1)
r.expect("namespace:nvme1n1", "fail", "debugfs heads does not list it", p2pdma=False)

# --- Linux 6.12: the capability is a queue feature nothing shows
h = switch_host("612", release="6.12.99+deb12-amd64")
r = h.run(want_rc=0)
r.expect("namespace:nvme0n1", "ok", "inferred from nvme0's p2p_capable 1; the kernel does not show the flag: Linux 6.12 keeps it")

# --- bad arguments
for args, msg in ((["--client", "zz"], "not a PCI address"),
                  (["--client", "0000:09:00.0"], "no such PCI device"),
                  (["--provider", "1:2:3"], "not a PCI address"),
                  (["--bogus"], "unrecognized arguments")):
    p = subprocess.run([CHECK, "--root", WORK + "/ready"] + args, capture_output=True, text=True)
    if p.returncode != 2 or msg not in p.stderr or p.stdout:
        die("%s: exit %d, stderr %r" % (args, p.returncode, p.stderr))
print("%d fake hosts checked, text and JSON agree" % n_cases)
PY
echo "nrp-check: verdicts, exit status and formats right on every fake host"
