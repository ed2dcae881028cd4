// SPDX-License-Identifier: GPL-2.0
/*
 * p2p-checkpoint: write simulated GPU memory to a block device and read
 * it back, with the I/O done on the GPU's P2PDMA pages by nrp_gpu.
 *
 * Region A of the GPU window gets a known pattern, goes to the device as
 * a checkpoint (chunk bytes per bio, qd bios in flight), comes back into
 * region B, and both are checksummed by the CPU in the kernel. The data
 * never passes through userspace or a bounce buffer: only the checksums
 * do, and the expected checksum of A is computed here from the pattern.
 * --bounce moves the same bytes through host memory instead, for
 * comparison; --mix bounces every other page.
 *
 * --info, --fill and --checksum expose the single ioctls, for tests.
 * --user is the other half, in user.c: P2P memory mapped into this
 * process and moved with O_DIRECT, as an application does.
 *
 * Exit status: 0 checkpoint verified, 1 error or mismatch, 2 usage,
 * 3 refused because the device's queue does not advertise PCI P2PDMA
 * (and --force was not given).
 */
#define _GNU_SOURCE
#include "p2p-checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "../nrp-gpu/nrp_gpu_uapi.h"

enum mode {
	MODE_CHECKPOINT,
	MODE_INFO,
	MODE_FILL,
	MODE_CHECKSUM,
};

struct opts {
	struct ckpt_opts c;
	const char *gpu;
	__u64 region_a, region_b;
	enum mode mode;
	int force, verify_chunks, region_b_set, keep_going;
	__u32 path;	/* 0, NRP_GPU_XFER_BOUNCE or NRP_GPU_XFER_MIX */
};

/* A checkpoint through the in-kernel mover, as ckpt_run() drives it. */
struct kckpt {
	const struct opts *o;
	int gfd;
	__u64 sum_a, sum_b, bios_w, bios_r;
};

static void print_help(void)
{
	printf("usage: " PROG " --dev BLOCKDEV [options]    write and verify a checkpoint\n"
	       "       " PROG " --info                    the GPU window, 'name value' lines\n"
	       "       " PROG " --fill --size N [--region-a N] [--seed N]\n"
	       "                                         fill, print the expected checksum\n"
	       "       " PROG " --checksum --size N [--region-a N]\n"
	       "                                         print the checksum of the range\n"
	       "  --gpu PATH        GPU stand-in device (default /dev/nrp-gpu0)\n"
	       "  --dev PATH        block device the checkpoint goes to (required)\n"
	       "  --size N          checkpoint size (default 1G; K, M, G, T suffixes)\n"
	       "  --offset N        byte offset on the block device (default 0)\n"
	       "  --chunk N         bytes per bio, i.e. per NVMe command (default 1M)\n"
	       "  --qd N            bios in flight (default 8, at most %d)\n"
	       "  --seed N          pattern seed (default 0x6e72702d636b7074)\n"
	       "  --region-a N      window offset of the source region (default 0)\n"
	       "  --region-b N      window offset of the read-back region (default: after A)\n"
	       "  --force           submit even if the device's queue lacks PCI P2PDMA\n"
	       "  --bounce          copy through host memory instead (what a user\n"
	       "                    without P2PDMA does), for comparison\n"
	       "  --mix             bounce every other page: requests mix P2PDMA\n"
	       "                    and host pages\n"
	       "  --verify-chunks   also compare A and B chunk by chunk\n"
	       "  --keep-going      submit every chunk even after one failed (a\n"
	       "                    batching submitter); the first error is reported\n"
	       "  --stats FILE      counters ('name value' lines) to show deltas of;\n"
	       "                    default: " STATS_DIR "/<ctrl>/stats\n"
	       "                    if present; 'none' to skip\n"
	       "exit: 0 verified, 1 error or mismatch, 2 bad arguments,\n"
	       "      3 refused: the device does not advertise PCI P2PDMA\n"
	       "\n"
	       "       " PROG " --user --help              the user-space mode: P2P memory\n"
	       "                                         mapped from p2pmem/allocate, O_DIRECT\n",
	       NRP_GPU_XFER_MAX_QD);
}

static __u64 gpu_checksum(int gfd, __u64 off, __u64 len, double *secs)
{
	struct nrp_gpu_checksum c = { .offset = off, .length = len };

	if (ioctl(gfd, NRP_GPU_IOC_CHECKSUM, &c))
		ckpt_err("CHECKSUM of window %#llx+%#llx: %s", off, len,
			 strerror(errno));
	if (secs)
		*secs = c.elapsed_ns / 1e9;
	return c.checksum;
}

static double gpu_fill(int gfd, __u64 off, __u64 len, __u64 seed)
{
	struct nrp_gpu_fill f = { .offset = off, .length = len, .seed = seed };

	if (ioctl(gfd, NRP_GPU_IOC_FILL, &f))
		ckpt_err("FILL of window %#llx+%#llx: %s", off, len,
			 strerror(errno));
	return f.elapsed_ns / 1e9;
}

/* What the kernel's CHECKSUM of a FILL with @seed over @len bytes gives. */
static __u64 expected_checksum(__u64 seed, __u64 len)
{
	__u64 h = nrp_gpu_csum_init(len);
	__u64 i;

	for (i = 0; i < len / NRP_GPU_WORD; i++)
		h = nrp_gpu_csum_step(h, nrp_gpu_pattern(seed, i));
	return nrp_gpu_csum_final(h);
}

/* One direction of the checkpoint; returns the seconds it took. */
static double xfer(struct ckpt *c, int write, struct ckpt_phase *ph)
{
	struct kckpt *k = c->priv;
	const struct opts *o = k->o;
	const char *what = write ? "write" : "read";
	struct nrp_gpu_xfer x = {
		.dev_fd		= c->fd,
		.dir		= write ? NRP_GPU_XFER_WRITE : NRP_GPU_XFER_READ,
		.flags		= (o->force ? NRP_GPU_XFER_FORCE : 0) | o->path |
				  (o->keep_going ? NRP_GPU_XFER_KEEP_GOING : 0),
		.qd		= o->c.qd,
		.dev_offset	= o->c.offset,
		.window_offset	= write ? o->region_a : o->region_b,
		.length		= o->c.size,
		.chunk		= o->c.chunk,
	};
	double secs, cpu;
	int err, ret;

	ckpt_phase_begin(c, ph, what);
	cpu = cpu_seconds();
	ret = ioctl(k->gfd, NRP_GPU_IOC_XFER, &x);
	cpu = cpu_seconds() - cpu;
	ckpt_phase_end(c, ph);
	if (ret) {
		err = errno;
		if (err == EOPNOTSUPP) {
			ckpt_warn("refused: %s does not advertise PCI P2PDMA (its queue lacks QUEUE_FLAG_PCI_P2PDMA), so its driver may not map GPU BAR pages for DMA; --force submits anyway",
				  o->c.dev);
			exit(EXIT_REFUSED);
		}
		if (x.status)
			ckpt_err("%s: I/O error after %llu bios (%llu bytes): %s",
				 what, x.bios, x.bytes,
				 strerror(-x.status));
		ckpt_err("%s: %s%s", what, strerror(err),
			 err == EINVAL || err == ERANGE ?
			 " (alignment or range; the kernel log says which)" : "");
	}
	secs = x.elapsed_ns / 1e9;
	ckpt_info("%-8s %.1f MiB in %.3f s = %.1f MiB/s, %llu bios (chunk %llu KiB, qd %u, logical block %u)%s",
		  what, o->c.size / MIB, secs, mib_s(o->c.size, secs),
		  x.bios, o->c.chunk >> 10, o->c.qd, x.logical_block_size,
		  o->path || x.result_flags & NRP_GPU_XFER_QUEUE_P2P ?
		  "" : " [forced: queue lacks P2PDMA]");
	/* machine-readable: the bench and the tests parse this line */
	ckpt_info("%-8s path %s cpu_s %.3f cpu_copied_bytes %llu",
		  what, o->path == NRP_GPU_XFER_BOUNCE ? "bounce" :
		  o->path == NRP_GPU_XFER_MIX ? "mix" : "p2p", cpu, x.copied);
	if (write)
		k->bios_w = x.bios;
	else
		k->bios_r = x.bios;
	return secs;
}

/* First chunk in which A and B differ, or -1. */
static long long compare_chunks(int gfd, const struct opts *o)
{
	__u64 pos, len;

	for (pos = 0; pos < o->c.size; pos += len) {
		len = o->c.size - pos < o->c.chunk ? o->c.size - pos : o->c.chunk;
		if (gpu_checksum(gfd, o->region_a + pos, len, NULL) !=
		    gpu_checksum(gfd, o->region_b + pos, len, NULL))
			return pos / o->c.chunk;
	}
	return -1;
}

/* The options of this half; ckpt_parse() takes the shared ones. */
static int parse_own(int c, void *priv)
{
	struct opts *o = priv;

	switch (c) {
	case 'g':
		o->gpu = optarg;
		break;
	case 'A':
		o->region_a = parse_size("--region-a", optarg);
		break;
	case 'B':
		o->region_b = parse_size("--region-b", optarg);
		o->region_b_set = 1;
		break;
	case 'f':
		o->force = 1;
		break;
	case 'b':
	case 'm':
		if (o->path)
			ckpt_usage_err("--bounce and --mix exclude each other");
		o->path = c == 'b' ? NRP_GPU_XFER_BOUNCE : NRP_GPU_XFER_MIX;
		break;
	case 'v':
		o->verify_chunks = 1;
		break;
	case 'k':
		o->keep_going = 1;
		break;
	case 'I':
	case 'F':
	case 'C':
		if (o->mode != MODE_CHECKPOINT)
			ckpt_usage_err("--info, --fill and --checksum exclude each other");
		o->mode = c == 'I' ? MODE_INFO : c == 'F' ? MODE_FILL : MODE_CHECKSUM;
		break;
	default:
		return 0;
	}
	return 1;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "gpu",	   required_argument, NULL, 'g' },
		{ "region-a",	   required_argument, NULL, 'A' },
		{ "region-b",	   required_argument, NULL, 'B' },
		{ "force",	   no_argument,	      NULL, 'f' },
		{ "bounce",	   no_argument,	      NULL, 'b' },
		{ "mix",	   no_argument,	      NULL, 'm' },
		{ "verify-chunks", no_argument,	      NULL, 'v' },
		{ "keep-going",	   no_argument,	      NULL, 'k' },
		{ "info",	   no_argument,	      NULL, 'I' },
		{ "fill",	   no_argument,	      NULL, 'F' },
		{ "checksum",	   no_argument,	      NULL, 'C' },
		{ }
	};

	*o = (struct opts) { .gpu = "/dev/nrp-gpu0" };
	/* 1 GiB, seed "nrp-ckpt" */
	ckpt_opts_init(&o->c, 1ULL << 30, 0x6e72702d636b7074ULL, NRP_GPU_XFER_MAX_QD);
	ckpt_parse(argc, argv, lopts, &o->c, print_help, parse_own, o);
	if (o->mode == MODE_CHECKPOINT && !o->c.dev)
		ckpt_usage_err("--dev is required");
	if ((o->mode == MODE_FILL || o->mode == MODE_CHECKSUM) && !o->c.size_set)
		ckpt_usage_err("--fill and --checksum need --size");
	if (!o->c.size || !o->c.chunk)
		ckpt_usage_err("--size and --chunk must not be 0");
	if (!o->region_b_set)
		o->region_b = o->region_a + o->c.size;
}

/* The single ioctls, for tests and for poking at the window by hand. */
static int run_mode(int gfd, const struct opts *o,
		    const struct nrp_gpu_info *info)
{
	double secs;
	__u64 sum;

	switch (o->mode) {
	case MODE_INFO:
		ckpt_info("pci_name %s", info->pci_name);
		ckpt_info("bar_size %llu", info->bar_size);
		ckpt_info("window_size %llu", info->window_size);
		ckpt_info("window_bar_offset %llu", info->window_bar_offset);
		ckpt_info("window_bus_addr %#llx", info->window_bus_addr);
		ckpt_info("p2pdma %d", !!(info->flags & NRP_GPU_INFO_P2PDMA));
		ckpt_info("published %d", !!(info->flags & NRP_GPU_INFO_PUBLISHED));
		break;
	case MODE_FILL:
		secs = gpu_fill(gfd, o->region_a, o->c.size, o->c.seed);
		ckpt_info("expected %#018llx (fill of %llu bytes at %#llx, seed %#llx: %.3f s)",
			  expected_checksum(o->c.seed, o->c.size), o->c.size,
			  o->region_a, o->c.seed, secs);
		break;
	case MODE_CHECKSUM:
		sum = gpu_checksum(gfd, o->region_a, o->c.size, &secs);
		ckpt_info("checksum %#018llx (%llu bytes at %#llx: %.3f s)",
			  sum, o->c.size, o->region_a, secs);
		break;
	case MODE_CHECKPOINT:
		break;
	}
	return 0;
}

/* Friendlier than the kernel's -ERANGE for the usual mistakes. */
static void check_layout(const struct opts *o, const struct nrp_gpu_info *info)
{
	__u64 w = info->window_size, size = o->c.size;

	if (size > w / 2)
		ckpt_err("the GPU window is %llu MiB: regions A and B of %llu MiB each do not fit; give QEMU a larger ivshmem memory backend (size=2G for a 1 GiB checkpoint) or pass a smaller --size",
			 w >> 20, size >> 20);
	if (o->region_a > w - size || o->region_b > w - size)
		ckpt_err("region A (%#llx) or B (%#llx) + %llu bytes lies outside the %llu-byte window",
			 o->region_a, o->region_b, size, w);
	if (o->region_a < o->region_b + size &&
	    o->region_b < o->region_a + size)
		ckpt_err("regions A (%#llx) and B (%#llx) of %llu bytes overlap",
			 o->region_a, o->region_b, size);
}

/* --- the steps ckpt_run() takes, on the GPU window ------------------------ */

static void k_fill(struct ckpt *c)
{
	struct kckpt *k = c->priv;
	const struct opts *o = k->o;
	double t_fill, t_sum;
	__u64 want;

	t_fill = gpu_fill(k->gfd, o->region_a, o->c.size, o->c.seed);
	ckpt_info("fill     region A with seed %#llx: %.3f s", o->c.seed, t_fill);
	k->sum_a = gpu_checksum(k->gfd, o->region_a, o->c.size, &t_sum);
	want = expected_checksum(o->c.seed, o->c.size);
	if (k->sum_a != want)
		ckpt_err("region A checksum %#llx, but the pattern gives %#llx: the BAR does not hold what FILL wrote",
			 k->sum_a, want);
	ckpt_info("checksum region A %#018llx, as the pattern predicts: %.3f s",
		  k->sum_a, t_sum);
}

/* B, where the checkpoint comes back to, holds the inverse pattern. */
static void k_refill(struct ckpt *c)
{
	struct kckpt *k = c->priv;

	gpu_fill(k->gfd, k->o->region_b, k->o->c.size, ~k->o->c.seed);
}

static void k_checksum_b(struct ckpt *c)
{
	struct kckpt *k = c->priv;
	double t_sum;

	k->sum_b = gpu_checksum(k->gfd, k->o->region_b, k->o->c.size, &t_sum);
	ckpt_info("checksum region B %#018llx: %.3f s", k->sum_b, t_sum);
}

static void k_verify(struct ckpt *c)
{
	struct kckpt *k = c->priv;
	const struct opts *o = k->o;
	__u64 size = o->c.size;
	long long bad;

	if (k->sum_b != k->sum_a || o->verify_chunks) {
		bad = compare_chunks(k->gfd, o);
		if (bad >= 0)
			ckpt_err("MISMATCH: region B differs from A, first in chunk %lld (device offset %llu)",
				 bad, o->c.offset + bad * o->c.chunk);
		if (k->sum_b != k->sum_a)
			ckpt_err("MISMATCH: checksums differ (%#llx vs %#llx) but no chunk does",
				 k->sum_a, k->sum_b);
		ckpt_info("compare  all %llu chunks of A and B match",
			  (size + o->c.chunk - 1) / o->c.chunk);
	}
	ckpt_info("checkpoint verified: %.1f MiB, write+flush %.3f s (%.1f MiB/s, %llu bios), read %.3f s (%.1f MiB/s, %llu bios)",
		  size / MIB, c->t_write + c->t_flush,
		  mib_s(size, c->t_write + c->t_flush), k->bios_w, c->t_read,
		  mib_s(size, c->t_read), k->bios_r);
}

static const struct ckpt_ops kernel_ops = {
	.flush		= "flush",
	.fill		= k_fill,
	.xfer		= xfer,
	.refill		= k_refill,
	.after_read	= k_checksum_b,
	.verify		= k_verify,
};

int main(int argc, char **argv)
{
	struct nrp_gpu_info info = { 0 };
	char stats_buf[PATH_MAX];
	__u64 dev_size = 0;
	struct kckpt k = { 0 };
	struct ckpt c = { 0 };
	struct opts o;
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--user"))
			return user_main(argc, argv);
	parse(argc, argv, &o);

	k.o = &o;
	k.gfd = open(o.gpu, O_RDWR | O_CLOEXEC);
	if (k.gfd < 0)
		ckpt_err("%s: %s%s", o.gpu, strerror(errno),
			 errno == ENOENT ? " (modprobe nrp_gpu, with a QEMU ivshmem device)" : "");
	if (ioctl(k.gfd, NRP_GPU_IOC_INFO, &info))
		ckpt_err("%s: INFO: %s (not an nrp_gpu device?)", o.gpu,
			 strerror(errno));
	if (info.version != NRP_GPU_UAPI_VERSION)
		ckpt_err("%s speaks UAPI version %u, this tool version %d",
			 o.gpu, info.version, NRP_GPU_UAPI_VERSION);
	if (o.mode != MODE_CHECKPOINT)
		return run_mode(k.gfd, &o, &info);
	ckpt_info("gpu      %s (%s): BAR %llu MiB, window %llu MiB at BAR offset %#llx, P2PDMA pages %s",
		  o.gpu, info.pci_name, info.bar_size >> 20,
		  info.window_size >> 20, info.window_bar_offset,
		  info.flags & NRP_GPU_INFO_P2PDMA ? "yes" : "NO");
	check_layout(&o, &info);

	c.o = &o.c;
	c.priv = &k;
	c.target = o.c.dev;
	c.fd = ckpt_open_dev(&o.c, 0, "", &dev_size);
	ckpt_info("dev      %s: %llu MiB; checkpoint of %.1f MiB at offset %llu, A at %#llx, B at %#llx",
		  o.c.dev, dev_size >> 20, o.c.size / MIB, o.c.offset,
		  o.region_a, o.region_b);
	c.stats = ckpt_stats_path(&o.c, o.c.dev, stats_buf, sizeof(stats_buf));
	ckpt_run(&c, &kernel_ops);
	close(c.fd);
	close(k.gfd);
	return 0;
}
