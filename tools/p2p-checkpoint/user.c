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
	struct ckpt_opts c;
	const char *file, *p2pmem;
	__u64 buf_offset;
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

/* The options of this half; ckpt_parse() takes the shared ones. */
static int user_own(int c, void *priv)
{
	struct uopts *o = priv;

	switch (c) {
	case 'u':
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
	case 'a':
		o->buf_offset = parse_size("--buf-offset", optarg);
		break;
	case 'k':
		o->keep = 1;
		break;
	default:
		return 0;
	}
	return 1;
}

static void user_parse(int argc, char **argv, struct uopts *o)
{
	static const struct option lopts[] = {
		{ "user",	no_argument,	   NULL, 'u' },
		{ "file",	required_argument, NULL, 'F' },
		{ "p2pmem",	required_argument, NULL, 'P' },
		{ "mem",	required_argument, NULL, 'M' },
		{ "io",		required_argument, NULL, 'i' },
		{ "buf-offset",	required_argument, NULL, 'a' },
		{ "keep",	no_argument,	   NULL, 'k' },
		{ }
	};

	*o = (struct uopts) { 0 };
	/* 64 MiB, seed "nrp-user" */
	ckpt_opts_init(&o->c, 64ULL << 20, 0x6e72702d75736572ULL, MAX_QD);
	ckpt_parse(argc, argv, lopts, &o->c, user_help, user_own, o);
	if (!o->c.dev == !o->file)
		ckpt_usage_err("--user needs one of --dev and --file");
	if (!o->c.size || o->c.size % NRP_GPU_WORD)
		ckpt_usage_err("--size must be a non-zero multiple of %d", NRP_GPU_WORD);
	if (!o->c.chunk || o->c.chunk > (MAX_IOV - 1) * PIECE)
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

static void sync_xfer(int fd, const struct ubuf *b, const struct ckpt_opts *o,
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
		       const struct ckpt_opts *o, int write, struct slot *s,
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

static void uring_xfer(int fd, const struct ubuf *b, const struct ckpt_opts *o,
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

/* Say clearly why a transfer did not happen, and exit. */
static void xfer_failed(const struct uopts *o, const struct ubuf *b,
			const char *what, const struct xfer_result *r,
			const char *disk)
{
	const char *target = o->c.dev ? o->c.dev : o->file;
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
	    (b->buf_offset || o->c.offset % 512 || o->c.size % 512 ||
	     o->c.chunk % 512)) {
		ckpt_warn("refused: O_DIRECT %s of %s at stream offset %llu: buffer offset %llu, file offset %llu, size %llu or chunk %llu breaks the alignment of %s (logical block %s bytes, DMA alignment mask %s)",
			  what, target, r->err_pos, b->buf_offset, o->c.offset,
			  o->c.size, o->c.chunk, disk, lbs, align);
		exit(EXIT_ALIGN);
	}
	ckpt_err("%s of %s failed at stream offset %llu: %s", what, target,
		 r->err_pos, strerror(r->err));
}

/* A checkpoint from this process's memory, as ckpt_run() drives it. */
struct uckpt {
	const struct uopts *o;
	struct ubuf b;
	const char *disk;
};

/* One direction, with O_DIRECT; returns the seconds it took. */
static double u_xfer(struct ckpt *c, int write, struct ckpt_phase *ph)
{
	struct uckpt *u = c->priv;
	const struct uopts *o = u->o;
	const char *what = write ? "write" : "read";
	struct xfer_result r = { 0 };

	ckpt_phase_begin(c, ph, what);
	if (o->io == IO_URING)
		uring_xfer(c->fd, &u->b, &o->c, write, &r);
	else
		sync_xfer(c->fd, &u->b, &o->c, write, &r);
	ckpt_phase_end(c, ph);
	if (r.err)
		xfer_failed(o, &u->b, what, &r, u->disk);
	ckpt_info("%-8s %.1f MiB in %.3f s = %.1f MiB/s, %llu requests (%s, %s memory, chunk %llu KiB)",
		  what, o->c.size / MIB, ph->secs, mib_s(o->c.size, ph->secs),
		  r.requests, io_names[o->io], mem_names[u->b.mem],
		  o->c.chunk >> 10);
	return ph->secs;
}

static void u_fill(struct ckpt *c)
{
	struct uckpt *u = c->priv;
	double t_fill;

	t_fill = ubuf_fill(&u->b, u->o->c.size, u->o->c.seed);
	ckpt_info("fill     %.1f MiB with seed %#llx by the CPU: %.3f s",
		  u->o->c.size / MIB, u->o->c.seed, t_fill);
}

/* The same memory takes the read-back: the inverse pattern first. */
static void u_refill(struct ckpt *c)
{
	struct uckpt *u = c->priv;

	ubuf_fill(&u->b, u->o->c.size, ~u->o->c.seed);
}

static void u_verify(struct ckpt *c)
{
	struct uckpt *u = c->priv;
	const struct uopts *o = u->o;
	double t_verify = 0;
	long long bad;

	bad = ubuf_verify(&u->b, o->c.size, o->c.seed, &t_verify);
	if (bad >= 0)
		ckpt_err("MISMATCH: the read-back differs from what was written at stream offset %lld (%s memory)",
			 bad, ubuf_kind(&u->b, bad));
	ckpt_info("compare  %.1f MiB byte-exact against the pattern: %.3f s",
		  o->c.size / MIB, t_verify);
}

static const struct ckpt_ops user_ops = {
	.flush		= "fsync",
	.phase_lines	= 1,
	.fill		= u_fill,
	.xfer		= u_xfer,
	.refill		= u_refill,
	.verify		= u_verify,
};

int user_main(int argc, char **argv)
{
	char dir[PATH_MAX], disk[64], stats_buf[PATH_MAX], dev[80];
	const char *fs = "";
	struct uckpt u = { 0 };
	struct ckpt c = { 0 };
	struct ubuf *b = &u.b;
	__u64 dev_size;
	struct statfs sfs;
	struct uopts o;
	int flags;

	user_parse(argc, argv, &o);
	u.o = &o;
	b->mem = o.mem;
	b->buf_offset = o.buf_offset;
	b->map_len = (o.buf_offset + o.c.size + PIECE - 1) / PIECE * PIECE;

	if (o.mem != MEM_HOST) {
		p2pmem_find(o.p2pmem, dir, sizeof(dir));
		b->p2p = p2pmem_map(dir, b->map_len);
	}
	if (o.mem != MEM_P2P) {
		b->host = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->host == MAP_FAILED)
			ckpt_err("%zu bytes of host memory: %s", b->map_len, strerror(errno));
	}

	c.o = &o.c;
	c.priv = &u;
	if (o.c.dev) {
		c.target = o.c.dev;
		c.fd = ckpt_open_dev(&o.c, O_DIRECT, "; use --file", &dev_size);
	} else {
		c.target = o.file;
		flags = O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC;
		if (!o.keep)
			flags |= O_TRUNC;
		c.fd = open(o.file, flags, 0644);
		if (c.fd < 0)
			ckpt_err("%s: %s%s", o.file, strerror(errno),
				 errno == EINVAL ? " (the filesystem refuses O_DIRECT)" : "");
		if (!fstatfs(c.fd, &sfs))
			fs = sfs.f_type == XFS_MAGIC ? " on xfs" :
			     sfs.f_type == EXT4_MAGIC ? " on ext4" : " on another filesystem";
	}
	dev_of_fd(c.fd, disk, sizeof(disk));
	u.disk = disk;
	ckpt_info("target   %s%s (block device %s), %.1f MiB at offset %llu, O_DIRECT",
		  c.target, fs, disk[0] ? disk : "?", o.c.size / MIB, o.c.offset);
	ckpt_info("buffer   %s memory%s, %llu bytes into its mapping; %s I/O, chunk %llu, qd %u",
		  mem_names[o.mem], o.mem == MEM_MIX ? " (4 KiB pieces, P2P first)" : "",
		  o.buf_offset, io_names[o.io], o.c.chunk, o.io == IO_URING ? o.c.qd : 1);

	snprintf(dev, sizeof(dev), "/dev/%s", disk);
	c.stats = ckpt_stats_path(&o.c, disk[0] ? dev : NULL, stats_buf,
				  sizeof(stats_buf));
	ckpt_run(&c, &user_ops);
	ckpt_info("checkpoint verified: %.1f MiB%s from %s memory, write %.3f s (%.1f MiB/s) + fsync %.3f s, read %.3f s (%.1f MiB/s)",
		  o.c.size / MIB, fs, mem_names[o.mem], c.t_write,
		  mib_s(o.c.size, c.t_write), c.t_flush, c.t_read,
		  mib_s(o.c.size, c.t_read));
	close(c.fd);
	if (b->p2p)
		munmap(b->p2p, b->map_len);
	if (b->host)
		munmap(b->host, b->map_len);
	return 0;
}
