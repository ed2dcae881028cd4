#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Reduce the raw results of `make bench` to results.json, results.md and
chart data for tools/bench/chart.gp.

    tools/bench/reduce.py RAW_DIR OUT_DIR

RAW_DIR holds what tools/bench/guest.sh left: runs.tsv (one line a
fio run), fio/*.json, ckpt/*.log (p2p-checkpoint output, each line
prefixed with a timestamp and the guest's CPU ticks), facts.txt.
Only the Python standard library is used.
"""
import json
import os
import re
import statistics
import sys

# Transport columns: the in-tree RDMA host is the baseline, ours is
# compared with it, nvme_tcp is a reference only.
BASE, OURS, REF = "rdma", "rdma_p2p", "tcp"
TR_LABEL = {BASE: "in-tree nvme_rdma", OURS: "ours (rdma_p2p)",
            REF: "nvme_tcp (ref.)"}

# profile: (title, [(metric, label, unit, better)])
CPU = ("cpu_us_per_io", "guest CPU per I/O", "µs", "lower")
PROFILES = {
    "rr4k_qd1": ("4 KiB random read, QD1",
                 [("lat_p50_us", "p50 latency", "µs", "lower"),
                  ("lat_p99_us", "p99 latency", "µs", "lower"),
                  ("iops", "IOPS", "IOPS", "higher"), CPU]),
    "rr4k_qd32x2": ("4 KiB random read, QD32 x 2 jobs",
                    [("iops", "IOPS", "IOPS", "higher"), CPU]),
    "rw4k_qd32": ("4 KiB random write, QD32",
                  [("iops", "IOPS", "IOPS", "higher"), CPU]),
    "sw128k_qd16": ("128 KiB sequential write, QD16",
                    [("bw_mib_s", "bandwidth", "MiB/s", "higher"), CPU]),
    "sw1m_qd16": ("1 MiB sequential write, QD16",
                  [("bw_mib_s", "bandwidth", "MiB/s", "higher"), CPU]),
    "xfs_ckpt": ("checkpoint file on XFS, O_DIRECT, 1 MiB x QD8 + fsync",
                 [("wall_s", "wall time", "s", "lower"), CPU]),
}
CKPT_MODES = {
    "p2p": "P2P: GPU BAR pages -> ours",
    "bounce-ours": "bounce via host memory -> ours",
    "bounce-intree": "bounce via host memory -> in-tree nvme_rdma",
}


def die(msg):
    sys.exit(f"reduce.py: {msg}")


def facts(*paths):
    f = {}
    for path in paths:
        try:
            with open(path) as fh:
                for line in fh:
                    k, _, v = line.strip().partition(" ")
                    f[k] = v
        except OSError:
            pass
    return f


def fio_values(path):
    with open(path) as fh:
        d = json.load(fh)
    jobs = d.get("jobs") or die(f"{path}: no jobs")
    ios = iops = bw = 0.0
    p50 = p99 = None
    for j in jobs:
        for side in ("read", "write"):
            s = j[side]
            ios += s["total_ios"]
            iops += s["iops"]
            bw += s["bw_bytes"]
            if s["total_ios"] and p50 is None:
                pct = (s.get("lat_ns", {}).get("percentile") or
                       s.get("clat_ns", {}).get("percentile") or {})
                if "50.000000" in pct:
                    p50 = pct["50.000000"] / 1000.0
                    p99 = pct.get("99.000000", 0) / 1000.0
    return {"ios": ios, "iops": iops, "bw_mib_s": bw / 2**20,
            "lat_p50_us": p50, "lat_p99_us": p99}


def read_runs(raw):
    """[(profile, backend, transport, run, {metric: value})]"""
    out = []
    path = os.path.join(raw, "runs.tsv")
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            c = line.rstrip("\n").split("\t")
            if len(c) < 12:
                continue
            prof, back, tr, run = c[0], c[1], c[2], int(c[3])
            wall = float(c[4])
            usr, sys_, sirq = float(c[7]), float(c[8]), float(c[9])
            v = fio_values(os.path.join(raw, c[11]))
            busy = usr + sys_ + sirq
            v.update({"wall_s": wall, "cpu_s": busy, "cpu_user_s": usr,
                      "cpu_sys_s": sys_, "cpu_softirq_s": sirq,
                      "cpu_idle_s": float(c[10]),
                      "cpu_us_per_io": busy / v["ios"] * 1e6 if v["ios"] else None})
            out.append((prof, back, tr, run, v))
    return out


def summary(vals):
    vals = [x for x in vals if x is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals),
            "max": max(vals), "n": len(vals), "runs": vals}


def gain(base, ours, better):
    """How much better ours is: >1 better, <1 worse."""
    if not base or not ours or not base["median"] or not ours["median"]:
        return None
    r = ours["median"] / base["median"]
    return r if better == "higher" else 1 / r


def verdict(base, ours, better):
    g = gain(base, ours, better)
    if g is None:
        return "n/a"
    if base["n"] < 2 or ours["n"] < 2:
        return "1 run: no spread"
    overlap = ours["min"] <= base["max"] and base["min"] <= ours["max"]
    if overlap:
        return "within noise"
    return "better" if g > 1 else "worse"


def ckpt_log(path, hz):
    """One p2p-checkpoint run from its timestamped log."""
    r = {"verified": False, "write_s": None, "flush_s": None,
         "proc_cpu_s": None, "cpu_copied_bytes": None, "stats": {},
         "have_stats": False}
    snaps = {}
    with open(path) as fh:
        for line in fh:
            m = re.match(r"@(\S+) (\d+) (\d+) (\d+) (\d+) (.*)$", line.rstrip("\n"))
            if not m:
                continue
            t = float(m.group(1))
            ticks = [int(m.group(i)) for i in range(2, 6)]
            text = m.group(6)
            if text.startswith("checksum region A") and "A" not in snaps:
                snaps["A"] = (t, ticks)
            elif text.startswith("flush "):
                snaps["F"] = (t, ticks)
                r["flush_s"] = float(text.split()[1])
            elif re.match(r"write\s+path ", text):
                w = text.split()
                kv = dict(zip(w[1::2], w[2::2]))
                r["path"] = kv.get("path")
                r["proc_cpu_s"] = float(kv["cpu_s"]) if "cpu_s" in kv else None
                if "cpu_copied_bytes" in kv:
                    r["cpu_copied_bytes"] = int(kv["cpu_copied_bytes"])
            elif re.match(r"write\s+[\d.]+ MiB in ", text):
                mm = re.match(r"write\s+([\d.]+) MiB in ([\d.]+) s", text)
                r["mib"] = float(mm.group(1))
                r["write_s"] = float(mm.group(2))
            elif text.startswith("stats ") and "after - before" in text:
                r["have_stats"] = True
            elif r["have_stats"] and re.match(r"\s+\S+\s+[+-]\d+$", text):
                k, v = text.split()
                r["stats"][k] = int(v)
            elif text.startswith("checkpoint verified"):
                r["verified"] = True
    if r["write_s"] is not None and r["flush_s"] is not None:
        r["wall_s"] = r["write_s"] + r["flush_s"]
    if "A" in snaps and "F" in snaps:
        (t0, a), (t1, b) = snaps["A"], snaps["F"]
        r["guest_cpu_s"] = sum(b[i] - a[i] for i in range(3)) / hz
        r["guest_cpu_softirq_s"] = (b[2] - a[2]) / hz
        r["phase_s"] = t1 - t0
    if r["have_stats"]:
        for k in ("host_bytes_mapped", "p2p_bytes_mapped"):
            r["stats"].setdefault(k, 0)
    return r


def read_ckpt(raw, hz):
    d = os.path.join(raw, "ckpt")
    runs = {}
    skipped = None
    if not os.path.isdir(d):
        return runs, "not run"
    for name in sorted(os.listdir(d)):
        if name == "skipped.txt":
            with open(os.path.join(d, name)) as fh:
                skipped = fh.read().strip()
        m = re.match(r"(.+)\.(\d+)\.log$", name)
        if m:
            runs.setdefault(m.group(1), []).append(ckpt_log(os.path.join(d, name), hz))
    return runs, skipped


def fmt(v, unit=""):
    if v is None:
        return "–"
    if float(v).is_integer():
        return f"{int(v):,}"
    if unit in ("IOPS",) or abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(s, unit):
    if not s:
        return "–"
    spread = ""
    if s["n"] > 1 and s["median"]:
        spread = f" ±{(s['max'] - s['min']) / 2 / abs(s['median']) * 100:.0f}%"
    return fmt(s["median"], unit) + spread


def main():
    if len(sys.argv) != 3:
        die("usage: reduce.py RAW_DIR OUT_DIR")
    raw, top = sys.argv[1], sys.argv[2]
    os.makedirs(top, exist_ok=True)
    if not os.path.isdir(raw):
        die(f"{raw}: no raw results (did the guest run?)")
    f = facts(os.path.join(raw, "facts.txt"), os.path.join(top, "host-facts.txt"))
    runs = read_runs(raw)
    transports = [t for t in (BASE, OURS, REF) if any(r[2] == t for r in runs)]

    results = []
    for prof, (title, metrics) in PROFILES.items():
        backends = sorted({r[1] for r in runs if r[0] == prof})
        for back in backends:
            for met, label, unit, better in metrics:
                per = {}
                for tr in transports:
                    per[tr] = summary([r[4].get(met) for r in runs
                                       if r[0] == prof and r[1] == back and r[2] == tr])
                b, o = per.get(BASE), per.get(OURS)
                ratio = (o["median"] / b["median"]) if b and o and b["median"] else None
                results.append({
                    "profile": prof, "title": title, "backend": back,
                    "metric": met, "label": label, "unit": unit,
                    "better": better, "transports": per,
                    "ratio_ours_intree": ratio,
                    "gain_ours": gain(b, o, better),
                    "gain_tcp": gain(b, per.get(REF), better),
                    "verdict": verdict(b, o, better),
                })

    ckpt, skipped = read_ckpt(raw, float(f.get("clk_tck", 100)))
    ck = []
    for mode in CKPT_MODES:
        rs = ckpt.get(mode)
        if not rs:
            continue
        e = {"mode": mode, "title": CKPT_MODES[mode], "runs": rs,
             "verified_runs": sum(1 for r in rs if r["verified"])}
        for k in ("wall_s", "guest_cpu_s", "guest_cpu_softirq_s", "proc_cpu_s",
                  "cpu_copied_bytes"):
            e[k] = summary([r.get(k) for r in rs])
        for k in ("host_bytes_mapped", "p2p_bytes_mapped"):
            vals = [r["stats"].get(k) for r in rs if r["have_stats"]]
            e[k] = summary(vals)
        e["mib"] = rs[0].get("mib")
        ck.append(e)

    def med(tr_sum):
        return tr_sum["median"] if tr_sum else None

    # The targets, measured (never pass/fail).
    targets = []
    ratios = [r for r in results if r["gain_ours"] is not None]
    if ratios:
        worst = min(ratios, key=lambda r: r["gain_ours"])
        best = max(ratios, key=lambda r: r["gain_ours"])
        targets.append({
            "target": "every ratio >= 1.00 against the in-tree transport (latency <= 1.00)",
            "met": all(r["gain_ours"] >= 1.0 for r in ratios),
            "detail": f"worst: {worst['profile']} {worst['label']} {worst['gain_ours']:.2f}x "
                      f"({worst['verdict']}); "
                      f"{sum(1 for r in ratios if r['gain_ours'] >= 1.0)}/{len(ratios)} >= 1.00"})
        targets.append({
            "target": "at least one profile >= 1.15x",
            "met": best["gain_ours"] >= 1.15,
            "detail": f"best: {best['profile']} {best['label']} {best['gain_ours']:.2f}x ({best['verdict']})"})
    xw = [r for r in results if r["profile"] == "xfs_ckpt" and r["metric"] == "wall_s"]
    if xw and xw[0]["gain_ours"] is not None:
        targets.append({
            "target": f"{f.get('ckpt_mib', '?')} MiB checkpoint file on XFS >= 1.15x",
            "met": xw[0]["gain_ours"] >= 1.15,
            "detail": f"{xw[0]['gain_ours']:.2f}x ({xw[0]['verdict']})"})
    byk = {e["mode"]: e for e in ck}
    if "p2p" in byk:
        p = byk["p2p"]
        copied = med(p["cpu_copied_bytes"])
        hostb = med(p["host_bytes_mapped"])
        targets.append({
            "target": "P2P checkpoint: zero bytes copied by the CPU into host memory",
            "met": copied == 0 and hostb in (0, None),
            "detail": f"CPU-copied {fmt(copied)} bytes, host_bytes_mapped +{fmt(hostb)}"})
        for bm in ("bounce-intree", "bounce-ours"):
            if bm not in byk:
                continue
            b = byk[bm]
            pp, bp = med(p["proc_cpu_s"]), med(b["proc_cpu_s"])
            if pp is not None and bp:
                targets.append({
                    "target": f"P2P checkpoint CPU time <= 0.5x the bounce path ({bm}): "
                              "the checkpoint process",
                    "met": pp / bp <= 0.5,
                    "detail": f"process CPU {fmt(pp)} s vs {fmt(bp)} s = {pp / bp:.2f}x"})
            pg, bg = med(p["guest_cpu_s"]), med(b["guest_cpu_s"])
            if pg is not None and bg:
                targets.append({
                    "target": f"P2P checkpoint CPU time <= 0.5x the bounce path ({bm}): "
                              "the whole guest",
                    "met": pg / bg <= 0.5,
                    "detail": f"guest CPU {fmt(pg)} s vs {fmt(bg)} s = {pg / bg:.2f}x, of it "
                              f"softirq (rxe, the soft NIC, and the target) "
                              f"{fmt(med(p['guest_cpu_softirq_s']))} s vs "
                              f"{fmt(med(b['guest_cpu_softirq_s']))} s"})
            break

    doc = {"format": "nvme-rdma-p2p-bench/1", "facts": f,
           "transports": {t: TR_LABEL[t] for t in transports},
           "results": results, "checkpoint": ck,
           "checkpoint_skipped": skipped, "targets": targets}
    with open(os.path.join(top, "results.json"), "w") as fh:
        json.dump(doc, fh, indent=1)

    # --- Markdown
    md = []
    md.append(f"## nvme-rdma-p2p bench ({f.get('date', '')})".replace(" ()", ""))
    md.append("")
    md.append(f"Guest kernel {f.get('kernel', '?')} under QEMU TCG, {f.get('cpus', '?')} vCPUs, "
              f"{f.get('mem_mib', '?')} MiB; rxe (soft-RoCE) and TCP on one veth pair; nvmet "
              f"target in the same guest; {f.get('fio', 'fio')}. Median of {f.get('runs', '?')} "
              f"runs per cell, transports alternating; ±: half the min-max range. "
              f"{f.get('runtime_s', '?')} s per fio run. Absolute numbers are TCG numbers: "
              f"compare columns, not machines. Module built from {f.get('git', '?')}; "
              f"host load average at the start {f.get('host_load', '?')} on "
              f"{f.get('host_cpus', '?')} CPUs.")
    md.append("")
    hdr = ["profile", "metric"] + [TR_LABEL[t] for t in transports]
    if not results:
        md.append("No transport measurements (NRP_BENCH_PROFILES or NRP_BENCH_TRANSPORTS empty?).")
        md.append("")
        hdr = []
    if OURS in transports and BASE in transports:
        hdr += ["ours / in-tree", "verdict"]
    if hdr:
        md.append("| " + " | ".join(hdr) + " |")
        md.append("|" + "---|" * len(hdr))
    for r in results:
        arrow = "↓" if r["better"] == "lower" else "↑"
        name = r["profile"] + ("" if r["backend"] == "null" or r["profile"] == "xfs_ckpt"
                               else f" ({r['backend']})")
        row = [name, f"{r['label']} ({r['unit']}) {arrow}"]
        row += [cell(r["transports"].get(t), r["unit"]) for t in transports]
        if OURS in transports and BASE in transports:
            ratio = r["ratio_ours_intree"]
            row += ["–" if ratio is None else f"{ratio:.2f}", r["verdict"]]
        md.append("| " + " | ".join(row) + " |")
    if hdr:
        md.append("")
        md.append("↑ higher is better, ↓ lower is better. \"within noise\": the min-max ranges "
                  "of ours and the in-tree overlap.")
        md.append("")
    if ck:
        mib = ck[0].get("mib")
        md.append(f"### Checkpoint of simulated GPU memory ({fmt(mib)} MiB, raw namespace on brd)")
        md.append("")
        md.append("| path | write+flush (s) ↓ | MiB/s ↑ | guest CPU (s) ↓ | of it softirq (s) "
                  "| process CPU (s) ↓ | bytes copied by the CPU ↓ | host_bytes_mapped | runs (verified) |")
        md.append("|---|---|---|---|---|---|---|---|---|")
        for e in ck:
            w = med(e["wall_s"])
            hb = e["host_bytes_mapped"]
            md.append("| " + " | ".join([
                e["title"], cell(e["wall_s"], "s"),
                fmt(mib / w) if w and mib else "–",
                cell(e["guest_cpu_s"], "s"), cell(e["guest_cpu_softirq_s"], "s"),
                cell(e["proc_cpu_s"], "s"),
                fmt(med(e["cpu_copied_bytes"])),
                "n/a (in-tree)" if hb is None else "+" + fmt(med(hb)),
                f"{len(e['runs'])} ({e['verified_runs']})"]) + " |")
        md.append("")
        md.append("guest CPU: busy time of all guest CPUs (user, system, irq, softirq) from the "
                  "start of the write to the end of the flush; it includes the target and rxe, "
                  "which copy every byte in software on both paths. process CPU: the "
                  "checkpoint process alone (the in-kernel mover runs in its ioctl).")
        md.append("")
    elif skipped:
        md.append(f"Checkpoint of simulated GPU memory: skipped ({skipped}).")
        md.append("")
    if targets:
        md.append("### Targets of issue 5 (measured, not pass/fail)")
        md.append("")
        md.append("| target | met | measured |")
        md.append("|---|---|---|")
        for t in targets:
            md.append(f"| {t['target']} | {'yes' if t['met'] else 'no'} | {t['detail']} |")
        md.append("")
    with open(os.path.join(top, "results.md"), "w") as fh:
        fh.write("\n".join(md))

    # --- chart data: gain over the in-tree transport (1 = same)
    with open(os.path.join(top, "chart-transports.dat"), "w") as fh:
        fh.write("# label ours ours_lo ours_hi tcp tcp_lo tcp_hi  (in-tree = 1, >1 better)\n")
        for r in results:
            b = r["transports"].get(BASE)
            if not b or not b["median"]:
                continue
            row = [f"\"{r['profile']} {r['label']}\""]
            for t in (OURS, REF):
                s = r["transports"].get(t)
                if not s or not s["median"]:
                    row += ["NaN"] * 3
                    continue
                g = [gain(b, {"median": x}, r["better"]) for x in
                     (s["median"], s["min"], s["max"])]
                row += [f"{g[0]:.4f}", f"{min(g[1:]):.4f}", f"{max(g[1:]):.4f}"]
            fh.write(" ".join(row) + "\n")
    with open(os.path.join(top, "chart-checkpoint.dat"), "w") as fh:
        modes = [e["mode"] for e in ck]
        fh.write("# metric " + " ".join(modes) + "  (each row relative to its largest value)\n")
        for key, label, scale in (("wall_s", "write+flush s", 1),
                                  ("guest_cpu_s", "guest CPU s", 1),
                                  ("proc_cpu_s", "process CPU s", 1),
                                  ("cpu_copied_bytes", "CPU-copied MiB", 2**-20)):
            vals = [med(e[key]) for e in ck]
            vals = [None if v is None else v * scale for v in vals]
            top_v = max([v for v in vals if v is not None] or [0])
            absl = " / ".join(fmt(v) for v in vals)
            row = [f"\"{label}\\n{absl}\""]
            row += ["NaN" if v is None or not top_v else f"{v / top_v:.4f}" for v in vals]
            fh.write(" ".join(row) + "\n")
        fh.write("# modes: " + " ".join(modes) + "\n")

if __name__ == "__main__":
    main()
