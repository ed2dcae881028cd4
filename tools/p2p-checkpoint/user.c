// SPDX-License-Identifier: GPL-2.0
/*
 * p2p-checkpoint --user: an application's checkpoint writer on P2P memory.
 *
 * What a GPU storage stack does in its kernel-P2PDMA mode, with nothing of
 * ours in between: map P2P memory of a published provider into this
 * process (Linux 6.2 and later export it for mmap() as the binary sysfs
 * file p2pmem/allocate of the PCI device), fill it, and move it with
 * O_DIRECT to a block device or to a file, then back into the same memory,
 * and compare byte for byte.
 *
 * The kernel pins such pages for block I/O only when the queue of the
 * device underneath says it can map them (the block layer's P2PDMA queue
 * feature); otherwise pinning fails with EREMOTEIO, and this tool reports
 * that as "refused" (exit 3). O_DIRECT's own alignment rules refuse
 * misaligned buffers with EINVAL (exit 5). Neither ever moves a byte
 * through a bounce buffer here, so the counters of the transport show
 * where the payload came from.
 *
 * --mem host uses ordinary memory for comparison; --mem mix builds every
 * request from 4 KiB pieces that alternate between P2P and host memory.
 * --io sync uses pwrite/pread (pwritev/preadv for mix), --io uring the
 * same requests through io_uring (raw system calls: no library needed).
 */
#define _GNU_SOURCE
#include "p2p-checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "../nrp-gpu/nrp_gpu_uapi.h"

/* Pieces of --mem mix, and the unit the buffers are laid out in. */
#define PIECE		4096ULL
/* One request's iovecs: a chunk of pieces, plus one for a misaligned start. */
#define MAX_IOV		1024
#define MAX_QD		256

#define XFS_MAGIC	0x58465342
#define EXT4_MAGIC	0xef53

enum mem_kind { MEM_P2P, MEM_HOST, MEM_MIX };
enum io_kind { IO_SYNC, IO_URING };

struct uopts {
	const char *dev, *file, *p2pmem, *stats;
	__u64 size, offset, chunk, seed, buf_offset;
	unsigned int qd;
	enum mem_kind mem;
	enum io_kind io;
	int keep;
};

/* Where the bytes of the checkpoint live: stream offset -> address. */
struct ubuf {
	char *p2p;	/* mapping of p2pmem/allocate, or NULL */
	char *host;	/* ordinary memory, or NULL */
	size_t map_len;
	__u64 buf_offset;
	enum mem_kind mem;
};

static const char *const mem_names[] = { "p2p", "host", "mix" };
static const char *const io_names[] = { "sync", "uring" };

static void user_help(void)
{
	printf("usage: " PROG " --user (--dev BLOCKDEV | --file PATH) [options]\n"
	       "  A checkpoint from P2P memory mapped into this process (mmap of\n"
	       "  /sys/bus/pci/devices/<bdf>/p2pmem/allocate), written with O_DIRECT,\n"
	       "  made durable with fsync, read back into the same memory and compared.\n"
	       "  --dev PATH        raw block device (opened O_EXCL)\n"
	       "  --file PATH       checkpoint file, e.g. on a filesystem on the device\n"
	       "  --p2pmem DIR|BDF  P2P provider (default: the first published one\n"
	       "                    whose p2pmem/allocate exists)\n"
	       "  --mem p2p|host|mix  where the buffer lives (default p2p); mix\n"
	       "                    alternates 4 KiB pieces of P2P and host memory\n"
	       "  --io sync|uring   pwrite/pread (pwritev/preadv) or io_uring (default sync)\n"
	       "  --size N          checkpoint bytes, multiple of 8 (default 64M)\n"
	       "  --offset N        byte offset in the device or file (default 0)\n"
	       "  --chunk N         bytes per request (default 1M)\n"
	       "  --qd N            requests in flight with --io uring (default 8, at most %d)\n"
	       "  --buf-offset N    start the buffer N bytes into the mapping (misaligned\n"
	       "                    buffers: served or refused, never corrupted)\n"
	       "  --seed N          pattern seed\n"
	       "  --keep            --file: do not truncate an existing file\n"
	       "  --stats FILE|none counters to show per phase (default: the\n"
	       "                    controller's stats under " STATS_DIR ")\n"
	       "exit: 0 verified, 1 error or mismatch, 2 bad arguments,\n"
	       "      3 refused: the kernel would not pin P2P pages for this device\n"
	       "        (its queue lacks the P2PDMA feature), 5 refused: O_DIRECT alignment\n",
	       MAX_QD);
}

static void user_parse(int argc, char **argv, struct uopts *o)
{
	static const struct option lopts[] = {
		{ "user",	no_argument,	   NULL, 'u' },
		{ "dev",	required_argument, NULL, 'd' },
		{ "file",	required_argument, NULL, 'F' },
		{ "p2pmem",	required_argument, NULL, 'P' },
		{ "mem",	required_argument, NULL, 'M' },
		{ "io",		required_argument, NULL, 'i' },
		{ "size",	required_argument, NULL, 's' },
		{ "offset",	required_argument, NULL, 'o' },
		{ "chunk",	required_argument, NULL, 'c' },
		{ "qd",		required_argument, NULL, 'q' },
		{ "buf-offset",	required_argument, NULL, 'a' },
		{ "seed",	required_argument, NULL, 'S' },
		{ "keep",	no_argument,	   NULL, 'k' },
		{ "stats",	required_argument, NULL, 't' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ }
	};
	__u64 qd;
	int c;

	*o = (struct uopts) {
		.size	= 64ULL << 20,
		.chunk	= 1ULL << 20,
		.qd	= 8,
		.seed	= 0x6e72702d75736572ULL,	/* "nrp-user" */
	};
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'F':
			o->file = optarg;
			break;
		case 'P':
			o->p2pmem = optarg;
			break;
		case 'M':
			if (!strcmp(optarg, "p2p"))
				o->mem = MEM_P2P;
			else if (!strcmp(optarg, "host"))
				o->mem = MEM_HOST;
			else if (!strcmp(optarg, "mix"))
				o->mem = MEM_MIX;
			else
				ckpt_usage_err("--mem: p2p, host or mix, not '%s'", optarg);
			break;
		case 'i':
			if (!strcmp(optarg, "sync"))
				o->io = IO_SYNC;
			else if (!strcmp(optarg, "uring"))
				o->io = IO_URING;
			else
				ckpt_usage_err("--io: sync or uring, not '%s'", optarg);
			break;
		case 's':
			o->size = parse_size("--size", optarg);
			break;
		case 'o':
			o->offset = parse_size("--offset", optarg);
			break;
		case 'c':
			o->chunk = parse_size("--chunk", optarg);
			break;
		case 'q':
			qd = parse_size("--qd", optarg);
			if (!qd || qd > MAX_QD)
				ckpt_usage_err("--qd must be 1..%d", MAX_QD);
			o->qd = qd;
			break;
		case 'a':
			o->buf_offset = parse_size("--buf-offset", optarg);
			break;
		case 'S':
			o->seed = parse_size("--seed", optarg);
			break;
		case 'k':
			o->keep = 1;
			break;
		case 't':
			o->stats = optarg;
			break;
		case 'h':
			user_help();
			exit(0);
		default:
			ckpt_usage_err("bad option");
		}
	}
	if (optind < argc)
		ckpt_usage_err("unexpected argument '%s'", argv[optind]);
	if (!o->dev == !o->file)
		ckpt_usage_err("--user needs one of --dev and --file");
	if (!o->size || o->size % NRP_GPU_WORD)
		ckpt_usage_err("--size must be a non-zero multiple of %d", NRP_GPU_WORD);
	if (!o->chunk || o->chunk > (MAX_IOV - 1) * PIECE)
		ckpt_usage_err("--chunk must be 1..%llu bytes", (MAX_IOV - 1) * PIECE);
	if (o->buf_offset >= PIECE)
		ckpt_usage_err("--buf-offset must be below %llu", PIECE);
}

/* --- P2P memory from p2pmem/allocate ------------------------------------ */

static int read_sysfs_u64(const char *dir, const char *name, __u64 *v)
{
	char path[PATH_MAX + 64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

/* The p2pmem directory to map from, in @dir. */
static void p2pmem_find(const char *want, char *dir, size_t len)
{
	__u64 published;
	struct stat st;
	glob_t g;
	size_t i;

	if (want) {
		if (strchr(want, '/'))
			snprintf(dir, len, "%s", want);
		else
			snprintf(dir, len, "/sys/bus/pci/devices/%s/p2pmem", want);
		return;
	}
	if (glob("/sys/bus/pci/devices/*/p2pmem/allocate", 0, NULL, &g)) {
		if (!glob("/sys/bus/pci/devices/*/p2pmem", 0, NULL, &g)) {
			ckpt_warn("refused: %s has no 'allocate': this kernel does not export P2P memory to user space (Linux 6.2 and later do)",
				  g.gl_pathv[0]);
			exit(EXIT_REFUSED);
		}
		ckpt_err("no P2P memory provider: no /sys/bus/pci/devices/*/p2pmem (modprobe nrp_gpu with a QEMU ivshmem device, or a GPU/NVMe CMB driver that publishes one)");
	}
	for (i = 0; i < g.gl_pathc; i++) {
		snprintf(dir, len, "%s", g.gl_pathv[i]);
		*strrchr(dir, '/') = '\0';
		if (!read_sysfs_u64(dir, "published", &published) && published)
			break;
	}
	if (i == g.gl_pathc)
		ckpt_err("no published P2P memory provider among %zu with p2pmem/allocate",
			 g.gl_pathc);
	globfree(&g);
	if (stat(dir, &st))
		ckpt_err("%s: %s", dir, strerror(errno));
}

static void *p2pmem_map(const char *dir, size_t len)
{
	char path[PATH_MAX + 16];
	__u64 avail = 0;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/allocate", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			ckpt_warn("refused: %s does not exist: this kernel does not export P2P memory to user space (Linux 6.2 and later do)",
				  path);
			exit(EXIT_REFUSED);
		}
		ckpt_err("%s: %s", path, strerror(errno));
	}
	read_sysfs_u64(dir, "available", &avail);
	/* the kernel takes one contiguous piece of the pool per mapping */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		ckpt_err("mmap of %zu bytes of %s: %s (p2pmem/available says %llu bytes free%s)",
			 len, path, strerror(errno), avail,
			 errno == ENOMEM ? "; nrp_gpu keeps window_mb of the BAR for itself" : "");
	close(fd);
	ckpt_info("p2pmem   %s: mapped %zu bytes (%llu were available)", dir, len, avail);
	return p;
}

/* --- the buffer: a stream of pieces ------------------------------------- */

static char *ubuf_addr(const struct ubuf *b, __u64 pos)
{
	char *base = b->mem == MEM_HOST ? b->host : b->p2p;

	if (b->mem == MEM_MIX && (pos / PIECE) & 1)
		base = b->host;
	return base + b->buf_offset + pos;
}

static const char *ubuf_kind(const struct ubuf *b, __u64 pos)
{
	if (b->mem == MEM_MIX)
		return (pos / PIECE) & 1 ? "host" : "p2p";
	return mem_names[b->mem];
}

/* Bytes from @pos to the end of its piece, at most @len. */
static __u64 ubuf_run(__u64 pos, __u64 len)
{
	__u64 n = PIECE - pos % PIECE;

	return n < len ? n : len;
}

/* Write the pattern of @seed over the whole stream. */
static double ubuf_fill(const struct ubuf *b, __u64 size, __u64 seed)
{
	double t = now();
	__u64 pos, w;

	for (pos = 0; pos < size; pos += NRP_GPU_WORD) {
		w = nrp_gpu_pattern(seed, pos / NRP_GPU_WORD);
		/* memcpy: --buf-offset may leave the words misaligned */
		memcpy(ubuf_addr(b, pos), &w, sizeof(w));
	}
	return now() - t;
}

/* Stream offset of the first word that is not the pattern, or -1. */
static long long ubuf_verify(const struct ubuf *b, __u64 size, __u64 seed,
			     double *secs)
{
	double t = now();
	__u64 pos, w;

	for (pos = 0; pos < size; pos += NRP_GPU_WORD) {
		memcpy(&w, ubuf_addr(b, pos), sizeof(w));
		if (w != nrp_gpu_pattern(seed, pos / NRP_GPU_WORD))
			return pos;
	}
	*secs = now() - t;
	return -1;
}

/* The iovecs of stream bytes [pos, pos + len): one per piece for mix. */
static int ubuf_iov(const struct ubuf *b, __u64 pos, __u64 len,
		    struct iovec *iov)
{
	int n = 0;
	__u64 run;

	if (b->mem != MEM_MIX) {
		iov[0] = (struct iovec) { ubuf_addr(b, pos), len };
		return 1;
	}
	for (; len; pos += run, len -= run) {
		run = ubuf_run(pos, len);
		iov[n++] = (struct iovec) { ubuf_addr(b, pos), run };
	}
	return n;
}

/* --- io_uring, by system call ------------------------------------------- */

struct uring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned int to_submit;
};

static int uring_init(struct uring *u, unsigned int entries)
{
	struct io_uring_params p = { 0 };
	size_t sq_len, cq_len;
	char *sq, *cq;

	u->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (u->fd < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (cq_len > sq_len)
			sq_len = cq_len;
		cq_len = sq_len;
	}
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  u->fd, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			return -errno;
	}
	u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       u->fd, IORING_OFF_SQES);
	if (u->sqes == MAP_FAILED)
		return -errno;
	u->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	u->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	u->sq_array = (unsigned int *)(sq + p.sq_off.array);
	u->cq_head = (unsigned int *)(cq + p.cq_off.head);
	u->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	u->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	u->to_submit = 0;
	return 0;
}

static struct io_uring_sqe *uring_get_sqe(struct uring *u)
{
	/* only this thread moves the tail: a plain read is enough */
	unsigned int tail = *u->sq_tail;
	unsigned int idx = tail & *u->sq_mask;
	struct io_uring_sqe *sqe = &u->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	u->sq_array[idx] = idx;
	/* the kernel must see the SQE filled before the tail that covers it */
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	u->to_submit++;
	return sqe;
}

/* Submit what is queued and wait for at least one completion. */
static int uring_enter(struct uring *u)
{
	long ret;

	do {
		ret = syscall(__NR_io_uring_enter, u->fd, u->to_submit, 1,
			      IORING_ENTER_GETEVENTS, NULL, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	u->to_submit -= ret;
	return 0;
}

static struct io_uring_cqe *uring_peek(struct uring *u)
{
	unsigned int head = *u->cq_head;

	if (head == __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE))
		return NULL;
	return &u->cqes[head & *u->cq_mask];
}

static void uring_seen(struct uring *u)
{
	__atomic_store_n(u->cq_head, *u->cq_head + 1, __ATOMIC_RELEASE);
}

/* --- the transfers ------------------------------------------------------- */

struct slot {
	__u64 pos, len;
	int busy;
	struct iovec iov[MAX_IOV];
};

struct xfer_result {
	__u64 bytes, requests;
	int err;		/* first errno */
	__u64 err_pos;		/* stream offset of the failed request */
};

static void sync_xfer(int fd, const struct ubuf *b, const struct uopts *o,
		      int write, struct xfer_result *r)
{
	static struct iovec iov[MAX_IOV];
	__u64 pos = 0, len;
	ssize_t ret;
	int n;

	while (pos < o->size) {
		len = o->size - pos < o->chunk ? o->size - pos : o->chunk;
		n = ubuf_iov(b, pos, len, iov);
		if (n == 1)
			ret = write ? pwrite(fd, iov[0].iov_base, len, o->offset + pos) :
				      pread(fd, iov[0].iov_base, len, o->offset + pos);
		else
			ret = write ? pwritev(fd, iov, n, o->offset + pos) :
				      preadv(fd, iov, n, o->offset + pos);
		r->requests++;
		if (ret <= 0) {
			r->err = ret ? errno : EIO;
			r->err_pos = pos;
			return;
		}
		/* a short transfer goes on from where it stopped */
		pos += ret;
		r->bytes += ret;
	}
}

static void uring_prep(struct uring *u, int fd, const struct ubuf *b,
		       const struct uopts *o, int write, struct slot *s,
		       unsigned int idx)
{
	struct io_uring_sqe *sqe = uring_get_sqe(u);
	int n = ubuf_iov(b, s->pos, s->len, s->iov);

	sqe->fd = fd;
	sqe->off = o->offset + s->pos;
	sqe->user_data = idx;
	if (n == 1) {
		sqe->opcode = write ? IORING_OP_WRITE : IORING_OP_READ;
		sqe->addr = (uintptr_t)s->iov[0].iov_base;
		sqe->len = s->len;
	} else {
		sqe->opcode = write ? IORING_OP_WRITEV : IORING_OP_READV;
		sqe->addr = (uintptr_t)s->iov;
		sqe->len = n;
	}
}

static void uring_xfer(int fd, const struct ubuf *b, const struct uopts *o,
		       int write, struct xfer_result *r)
{
	static struct slot slots[MAX_QD];
	unsigned int i, inflight = 0;
	struct io_uring_cqe *cqe;
	struct uring u;
	__u64 next = 0;
	struct slot *s;
	int ret;

	ret = uring_init(&u, o->qd);
	if (ret)
		ckpt_err("io_uring_setup: %s", strerror(-ret));
	while ((next < o->size && !r->err) || inflight) {
		for (i = 0; i < o->qd && next < o->size && !r->err; i++) {
			s = &slots[i];
			if (s->busy)
				continue;
			s->busy = 1;
			s->pos = next;
			s->len = o->size - next < o->chunk ? o->size - next : o->chunk;
			next += s->len;
			uring_prep(&u, fd, b, o, write, s, i);
			inflight++;
			r->requests++;
		}
		ret = uring_enter(&u);
		if (ret)
			ckpt_err("io_uring_enter: %s", strerror(-ret));
		while ((cqe = uring_peek(&u))) {
			s = &slots[cqe->user_data];
			ret = cqe->res;
			uring_seen(&u);
			if (ret > 0 && (__u64)ret < s->len) {
				/* short: the rest of this request goes again */
				r->bytes += ret;
				s->pos += ret;
				s->len -= ret;
				uring_prep(&u, fd, b, o, write, s, s - slots);
				r->requests++;
				continue;
			}
			if (ret <= 0 && !r->err) {
				r->err = ret ? -ret : EIO;
				r->err_pos = s->pos;
			}
			if (ret > 0)
				r->bytes += ret;
			s->busy = 0;
			inflight--;
		}
	}
	close(u.fd);
}

/* --- where the counters are --------------------------------------------- */

/* The block device under @fd: the device itself, or the file's filesystem. */
static void dev_of_fd(int fd, char *name, size_t len)
{
	char link[PATH_MAX], path[64];
	struct stat st;
	dev_t d;
	ssize_t n;

	name[0] = '\0';
	if (fstat(fd, &st))
		return;
	d = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(d), minor(d));
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	snprintf(name, len, "%s", strrchr(link, '/') + 1);
}

static void queue_attr(const char *disk, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", disk, attr);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

struct phase {
	const char *name;
	double secs;
	struct stat_set before, after;
	int have;
};

static void phase_print(const struct phase *p, __u64 bytes)
{
	/* machine-readable: the tests parse these lines */
	if (p->have)
		ckpt_info("phase %-6s bytes %llu secs %.3f p2p_bytes_mapped %llu host_bytes_mapped %llu p2p_unreachable %llu errors %llu",
			  p->name, bytes, p->secs,
			  stats_delta(&p->before, &p->after, "p2p_bytes_mapped"),
			  stats_delta(&p->before, &p->after, "host_bytes_mapped"),
			  stats_delta(&p->before, &p->after, "p2p_unreachable"),
			  stats_delta(&p->before, &p->after, "errors"));
	else
		ckpt_info("phase %-6s bytes %llu secs %.3f", p->name, bytes, p->secs);
}

static void phase_begin(struct phase *p, const char *name, const char *stats)
{
	p->name = name;
	p->have = stats && !stats_read(stats, &p->before);
	p->secs = now();
}

static void phase_end(struct phase *p, const char *stats)
{
	p->secs = now() - p->secs;
	if (p->have)
		p->have = !stats_read(stats, &p->after);
}

/* Say clearly why a transfer did not happen, and exit. */
static void xfer_failed(const struct uopts *o, const struct ubuf *b,
			const char *what, const struct xfer_result *r,
			const char *disk)
{
	const char *target = o->dev ? o->dev : o->file;
	char align[32], lbs[32];

	queue_attr(disk, "dma_alignment", align, sizeof(align));
	queue_attr(disk, "logical_block_size", lbs, sizeof(lbs));
	ckpt_info("result %s failed errno %d (%s) after %llu bytes, %llu requests",
		  what, r->err, strerror(r->err), r->bytes, r->requests);
	if (r->err == EREMOTEIO && b->mem != MEM_HOST) {
		ckpt_warn("refused: %s of %s from %s memory: the kernel would not pin P2PDMA pages for I/O to %s (%s): its queue does not advertise the P2PDMA feature, so the block layer never lets its driver see BAR pages",
			  what, target, mem_names[b->mem], target, disk);
		exit(EXIT_REFUSED);
	}
	if (r->err == EINVAL &&
	    (b->buf_offset || o->offset % 512 || o->size % 512 || o->chunk % 512)) {
		ckpt_warn("refused: O_DIRECT %s of %s at stream offset %llu: buffer offset %llu, file offset %llu, size %llu or chunk %llu breaks the alignment of %s (logical block %s bytes, DMA alignment mask %s)",
			  what, target, r->err_pos, b->buf_offset, o->offset,
			  o->size, o->chunk, disk, lbs, align);
		exit(EXIT_ALIGN);
	}
	ckpt_err("%s of %s failed at stream offset %llu: %s", what, target,
		 r->err_pos, strerror(r->err));
}

static double run_xfer(int fd, const struct ubuf *b, const struct uopts *o,
		       int write, const char *disk, struct phase *ph,
		       const char *stats)
{
	const char *what = write ? "write" : "read";
	struct xfer_result r = { 0 };

	phase_begin(ph, what, stats);
	if (o->io == IO_URING)
		uring_xfer(fd, b, o, write, &r);
	else
		sync_xfer(fd, b, o, write, &r);
	phase_end(ph, stats);
	if (r.err)
		xfer_failed(o, b, what, &r, disk);
	ckpt_info("%-8s %.1f MiB in %.3f s = %.1f MiB/s, %llu requests (%s, %s memory, chunk %llu KiB)",
		  what, o->size / MIB, ph->secs, mib_s(o->size, ph->secs),
		  r.requests, io_names[o->io], mem_names[b->mem],
		  o->chunk >> 10);
	return ph->secs;
}

int user_main(int argc, char **argv)
{
	char dir[PATH_MAX], disk[64], stats_buf[PATH_MAX], dev[80];
	const char *stats = NULL, *fs = "";
	struct phase ph_w, ph_f, ph_r;
	struct ubuf b = { 0 };
	double t_fill, t_verify = 0;
	__u64 dev_size;
	struct statfs sfs;
	struct uopts o;
	long long bad;
	int fd, flags;

	user_parse(argc, argv, &o);
	b.mem = o.mem;
	b.buf_offset = o.buf_offset;
	b.map_len = (o.buf_offset + o.size + PIECE - 1) / PIECE * PIECE;

	if (o.mem != MEM_HOST) {
		p2pmem_find(o.p2pmem, dir, sizeof(dir));
		b.p2p = p2pmem_map(dir, b.map_len);
	}
	if (o.mem != MEM_P2P) {
		b.host = mmap(NULL, b.map_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b.host == MAP_FAILED)
			ckpt_err("%zu bytes of host memory: %s", b.map_len, strerror(errno));
	}

	if (o.dev) {
		/* O_EXCL: never write under a mounted filesystem */
		fd = open(o.dev, O_RDWR | O_DIRECT | O_EXCL | O_CLOEXEC);
		if (fd < 0)
			ckpt_err("%s: %s", o.dev, strerror(errno));
		if (ioctl(fd, BLKGETSIZE64, &dev_size))
			ckpt_err("%s: not a block device (BLKGETSIZE64: %s); use --file",
				 o.dev, strerror(errno));
		if (o.offset > dev_size || o.size > dev_size - o.offset)
			ckpt_err("%s has %llu bytes: %llu bytes at offset %llu do not fit",
				 o.dev, dev_size, o.size, o.offset);
	} else {
		flags = O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC;
		if (!o.keep)
			flags |= O_TRUNC;
		fd = open(o.file, flags, 0644);
		if (fd < 0)
			ckpt_err("%s: %s%s", o.file, strerror(errno),
				 errno == EINVAL ? " (the filesystem refuses O_DIRECT)" : "");
		if (!fstatfs(fd, &sfs))
			fs = sfs.f_type == XFS_MAGIC ? " on xfs" :
			     sfs.f_type == EXT4_MAGIC ? " on ext4" : " on another filesystem";
	}
	dev_of_fd(fd, disk, sizeof(disk));
	ckpt_info("target   %s%s (block device %s), %.1f MiB at offset %llu, O_DIRECT",
		  o.dev ? o.dev : o.file, fs, disk[0] ? disk : "?",
		  o.size / MIB, o.offset);
	ckpt_info("buffer   %s memory%s, %llu bytes into its mapping; %s I/O, chunk %llu, qd %u",
		  mem_names[o.mem], o.mem == MEM_MIX ? " (4 KiB pieces, P2P first)" : "",
		  o.buf_offset, io_names[o.io], o.chunk, o.io == IO_URING ? o.qd : 1);

	if (!o.stats && disk[0]) {
		snprintf(dev, sizeof(dev), "/dev/%s", disk);
		stats = stats_find(dev, stats_buf, sizeof(stats_buf));
	} else if (o.stats && strcmp(o.stats, "none")) {
		stats = o.stats;
	}

	t_fill = ubuf_fill(&b, o.size, o.seed);
	ckpt_info("fill     %.1f MiB with seed %#llx by the CPU: %.3f s", o.size / MIB,
		  o.seed, t_fill);

	run_xfer(fd, &b, &o, 1, disk, &ph_w, stats);
	/* a checkpoint is one only once it is durable */
	phase_begin(&ph_f, "fsync", stats);
	if (fsync(fd))
		ckpt_err("fsync of %s: %s", o.dev ? o.dev : o.file, strerror(errno));
	phase_end(&ph_f, stats);
	ckpt_info("fsync    %.3f s", ph_f.secs);

	/* another pattern first: a read that moved nothing cannot pass */
	ubuf_fill(&b, o.size, ~o.seed);
	run_xfer(fd, &b, &o, 0, disk, &ph_r, stats);

	phase_print(&ph_w, o.size);
	phase_print(&ph_f, 0);
	phase_print(&ph_r, o.size);
	if (ph_w.have && ph_r.have)
		stats_print(stats, &ph_w.before, &ph_r.after);

	bad = ubuf_verify(&b, o.size, o.seed, &t_verify);
	if (bad >= 0)
		ckpt_err("MISMATCH: the read-back differs from what was written at stream offset %lld (%s memory)",
			 bad, ubuf_kind(&b, bad));
	ckpt_info("compare  %.1f MiB byte-exact against the pattern: %.3f s",
		  o.size / MIB, t_verify);
	ckpt_info("checkpoint verified: %.1f MiB%s from %s memory, write %.3f s (%.1f MiB/s) + fsync %.3f s, read %.3f s (%.1f MiB/s)",
		  o.size / MIB, fs, mem_names[o.mem], ph_w.secs,
		  mib_s(o.size, ph_w.secs), ph_f.secs, ph_r.secs,
		  mib_s(o.size, ph_r.secs));
	close(fd);
	if (b.p2p)
		munmap(b.p2p, b.map_len);
	if (b.host)
		munmap(b.host, b.map_len);
	return 0;
}
