#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scatterlists of every length around the request's own entries: a
# command keeps NVME_INLINE_SG_CNT (2) entries behind its request and
# chains tables from the kernel's sg pools (8 to 128 entries) behind them
# for more. A chained command turns the last of those entries into a
# chain link: a later command of that tag with one or two segments must
# not follow it. Writes and reads of 1 to 100 scattered pages (no two
# physically adjacent, so no two merge into one segment) in random
# order on a queue of 16 tags, each read back and compared; the trace
# shows which tag carried which segment count, and the test asserts that
# tags went from a chained command to one in the inline entries, and
# from longer commands to shorter ones.
. "$(dirname "$0")/lib.sh"

nrp_tracefs_require
E=$T/events/nvme_rdma_p2p/nrp_map

nrp_std_setup 64
nrp_connect --nr-io-queues=1 --queue-size=16; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
inst=${ctrl#nvme}

nrp_cleanup_push "echo 0 >$E/enable; echo 1 >$T/tracing_on"
echo 0 >$T/tracing_on
echo >$T/trace
echo 1 >$E/enable
echo 1 >$T/tracing_on
seed=${NRP_SG_SEED:-$RANDOM}
echo "seed $seed (NRP_SG_SEED)"
out=$(python3 - "$dev" "$seed" <<'EOF'
import ctypes, mmap, os, random, sys

dev, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
PAGE, MAXSEG = 4096, 100
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
pagemap = os.open("/proc/self/pagemap", os.O_RDONLY)


# MAXSEG pages of a buffer, no one of them physically next to the one
# before it: the block layer merges a page with the one that follows it
# in memory into one segment. Virtual distance proves nothing (every
# other page of a buffer merged in a cold make check at 56d6b54: the
# allocator had handed out the touched pages back to back), so the
# pages' frame numbers are read from /proc/self/pagemap (root sees them).
def apart_pages(npages=4 * MAXSEG):
    buf = mmap.mmap(-1, npages * PAGE)
    for i in range(npages):
        buf[i * PAGE] = 1
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    view, pages, last = memoryview(buf), [], None
    for i in range(npages):
        ent = int.from_bytes(os.pread(pagemap, 8, (base // PAGE + i) * 8), "little")
        if not ent >> 63:
            continue
        pfn = ent & ((1 << 55) - 1)
        if pfn == 0:
            sys.exit("/proc/self/pagemap shows no frame numbers (not root?)")
        if last is not None and abs(pfn - last) == 1:
            continue
        pages.append(view[i * PAGE:(i + 1) * PAGE])
        last = pfn
        if len(pages) == MAXSEG:
            return buf, pages
    sys.exit(f"no {MAXSEG} pages apart in {npages}")


wbuf, wpages = apart_pages()
rbuf, rpages = apart_pages()
counts = [1, 1, 2, 2, 3, 8, 9, 16, 17, 32, 33, 64, 65, 100]
for it in range(240):
    n = rng.choice(counts)
    off = rng.randrange(0, (64 << 20) // PAGE - MAXSEG) * PAGE
    data = os.urandom(n * PAGE)
    for i in range(n):
        wpages[i][:] = data[i * PAGE:(i + 1) * PAGE]
        rpages[i][:] = b'\0' * PAGE
    if os.pwritev(fd, wpages[:n], off) != n * PAGE:
        sys.exit(f"iteration {it}: short write of {n} pages")
    if os.preadv(fd, rpages[:n], off) != n * PAGE:
        sys.exit(f"iteration {it}: short read of {n} pages")
    for i in range(n):
        if rpages[i] != data[i * PAGE:(i + 1) * PAGE]:
            sys.exit(f"iteration {it}: {n} pages at {off}: page {i} read back differs")
print("240 writes and reads verified")
EOF
) || nrp_fail "${out:-python3 failed}"
echo "$out"
echo 0 >$T/tracing_on

# segment counts per tag, in order (the cid's low 12 bits are the tag)
seq=$(grep "nrp_map: nvme$inst qid=1 " $T/trace | sed -n 's/.* cid=\([0-9a-fx]*\) .* segments=\([0-9]*\) .*/\1 \2/p')
[ -n "$seq" ] || nrp_fail "no nrp_map events of nvme$inst's I/O queue"
# mawk, Debian's awk, has no strtonum: read the hex cid digit by digit
stats=$(echo "$seq" | awk 'function hex(s,  i, v) {
	sub(/^0x/, "", s); v = 0
	for (i = 1; i <= length(s); i++)
		v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v
}
{
	tag = hex($1) % 4096; n = $2
	if (n == 100) hundred++
	if (tag in last) {
		if (last[tag] > 2 && n <= 2) toinline++
		if (last[tag] > n) shorter++
	}
	last[tag] = n; tags[tag] = 1
} END {
	nt = 0; for (t in tags) nt++
	printf "%d %d %d %d\n", nt, toinline + 0, shorter + 0, hundred + 0
}')
read -r ntags toinline shorter hundred <<<"$stats"
echo "tags used: $ntags; chained then 1 or 2 segments on one tag: $toinline; longer then shorter: $shorter; 100-segment commands: $hundred"
[ "$hundred" -gt 0 ] || nrp_fail "no command had 100 segments: the pages were merged, the test proves nothing"
[ "$toinline" -gt 0 ] || nrp_fail "no tag followed a chained command with one of 1 or 2 segments (seed $seed)"
[ "$shorter" -gt 10 ] || nrp_fail "only $shorter commands shorter than their tag's previous one"
nrp_pass
