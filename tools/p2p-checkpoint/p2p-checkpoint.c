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
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "../nrp-gpu/nrp_gpu_uapi.h"

enum mode {
	MODE_CHECKPOINT,
	MODE_INFO,
	MODE_FILL,
	MODE_CHECKSUM,
};

struct opts {
	const char *gpu;
	const char *dev;
	const char *stats;
	__u64 size, offset, chunk, seed, region_a, region_b;
	unsigned int qd;
	enum mode mode;
	int force, verify_chunks, region_b_set, size_set;
	__u32 path;	/* 0, NRP_GPU_XFER_BOUNCE or NRP_GPU_XFER_MIX */
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

__u64 parse_size(const char *opt, const char *s)
{
	unsigned int shift = 0;
	char *end;
	__u64 v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		ckpt_usage_err("%s: bad number '%s'", opt, s);
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	}
	if (shift) {
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end || (shift && v > (ULLONG_MAX >> shift)))
		ckpt_usage_err("%s: bad size '%s'", opt, s);
	return v << shift;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * CPU time of this process, user and system: the in-kernel mover runs
 * in our ioctl, so its copies (--bounce) are charged here.
 */
double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double mib_s(__u64 bytes, double secs)
{
	return secs > 0 ? bytes / MIB / secs : 0;
}

/* The counters as the transport shows them, one "name value" a line. */
int stats_read(const char *path, struct stat_set *s)
{
	char line[256];
	FILE *f;
	__u64 v;

	s->n = 0;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && s->n < STATS_MAX) {
		/* straight into the next slot: it only counts once filled */
		if (sscanf(line, "%47s %llu", s->name[s->n], &v) != 2)
			continue;
		s->val[s->n++] = v;
	}
	fclose(f);
	return 0;
}

void stats_print(const char *path, const struct stat_set *a,
		 const struct stat_set *b)
{
	int i, j, same = 0;

	ckpt_info("stats    %s (after - before):", path);
	for (i = 0; i < b->n; i++) {
		for (j = 0; j < a->n; j++)
			if (!strcmp(a->name[j], b->name[i]))
				break;
		if (j == a->n) {
			ckpt_info("  %-24s %llu (new)", b->name[i], b->val[i]);
			continue;
		}
		if (a->val[j] == b->val[i]) {
			same++;
			continue;
		}
		ckpt_info("  %-24s %+lld", b->name[i],
			  (long long)(b->val[i] - a->val[j]));
	}
	ckpt_info("  (%d counters unchanged)", same);
}

/* How much counter @name grew from @a to @b (0 if either lacks it). */
__u64 stats_delta(const struct stat_set *a, const struct stat_set *b,
		  const char *name)
{
	int i, j;

	for (i = 0; i < b->n; i++) {
		if (strcmp(b->name[i], name))
			continue;
		for (j = 0; j < a->n; j++)
			if (!strcmp(a->name[j], name))
				return b->val[i] - a->val[j];
	}
	return 0;
}

/*
 * The counters of the controller behind @dev: nvmeXnY (or nvmeXcYnZ)
 * usually belongs to nvmeX; else the only controller there is.
 */
const char *stats_find(const char *dev, char *buf, size_t len)
{
	const char *base;
	unsigned int ctrl;
	char *real;
	glob_t g;

	real = realpath(dev, NULL);
	base = strrchr(real ? real : dev, '/');
	base = base ? base + 1 : dev;
	if (sscanf(base, "nvme%u", &ctrl) == 1) {
		snprintf(buf, len, STATS_DIR "/nvme%u/stats", ctrl);
		if (!access(buf, R_OK)) {
			free(real);
			return buf;
		}
	}
	free(real);
	if (glob(STATS_GLOB, 0, NULL, &g)) {
		ckpt_info("stats    none: no %s", STATS_GLOB);
		return NULL;
	}
	if (g.gl_pathc == 1) {
		snprintf(buf, len, "%s", g.gl_pathv[0]);
		globfree(&g);
		return buf;
	}
	ckpt_info("stats    none: %zu controllers under %s, none is %s's; use --stats",
		  g.gl_pathc, STATS_DIR, dev);
	globfree(&g);
	return NULL;
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
static double xfer(int gfd, int dfd, const struct opts *o, __u32 dir,
		   __u64 window_off, const char *what, __u64 *bios)
{
	struct nrp_gpu_xfer x = {
		.dev_fd		= dfd,
		.dir		= dir,
		.flags		= (o->force ? NRP_GPU_XFER_FORCE : 0) | o->path,
		.qd		= o->qd,
		.dev_offset	= o->offset,
		.window_offset	= window_off,
		.length		= o->size,
		.chunk		= o->chunk,
	};
	double secs, cpu;
	int err;

	cpu = cpu_seconds();
	if (ioctl(gfd, NRP_GPU_IOC_XFER, &x)) {
		err = errno;
		if (err == EOPNOTSUPP) {
			ckpt_warn("refused: %s does not advertise PCI P2PDMA (its queue lacks QUEUE_FLAG_PCI_P2PDMA), so its driver may not map GPU BAR pages for DMA; --force submits anyway",
				  o->dev);
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
	cpu = cpu_seconds() - cpu;
	secs = x.elapsed_ns / 1e9;
	ckpt_info("%-8s %.1f MiB in %.3f s = %.1f MiB/s, %llu bios (chunk %llu KiB, qd %u, logical block %u)%s",
		  what, o->size / MIB, secs, mib_s(o->size, secs),
		  x.bios, o->chunk >> 10, o->qd, x.logical_block_size,
		  o->path || x.result_flags & NRP_GPU_XFER_QUEUE_P2P ?
		  "" : " [forced: queue lacks P2PDMA]");
	/* machine-readable: the bench and the tests parse this line */
	ckpt_info("%-8s path %s cpu_s %.3f cpu_copied_bytes %llu",
		  what, o->path == NRP_GPU_XFER_BOUNCE ? "bounce" :
		  o->path == NRP_GPU_XFER_MIX ? "mix" : "p2p", cpu, x.copied);
	*bios = x.bios;
	return secs;
}

/* First chunk in which A and B differ, or -1. */
static long long compare_chunks(int gfd, const struct opts *o)
{
	__u64 pos, len;

	for (pos = 0; pos < o->size; pos += len) {
		len = o->size - pos < o->chunk ? o->size - pos : o->chunk;
		if (gpu_checksum(gfd, o->region_a + pos, len, NULL) !=
		    gpu_checksum(gfd, o->region_b + pos, len, NULL))
			return pos / o->chunk;
	}
	return -1;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "gpu",	   required_argument, NULL, 'g' },
		{ "dev",	   required_argument, NULL, 'd' },
		{ "size",	   required_argument, NULL, 's' },
		{ "offset",	   required_argument, NULL, 'o' },
		{ "chunk",	   required_argument, NULL, 'c' },
		{ "qd",		   required_argument, NULL, 'q' },
		{ "seed",	   required_argument, NULL, 'S' },
		{ "region-a",	   required_argument, NULL, 'A' },
		{ "region-b",	   required_argument, NULL, 'B' },
		{ "stats",	   required_argument, NULL, 't' },
		{ "force",	   no_argument,	      NULL, 'f' },
		{ "bounce",	   no_argument,	      NULL, 'b' },
		{ "mix",	   no_argument,	      NULL, 'm' },
		{ "verify-chunks", no_argument,	      NULL, 'v' },
		{ "info",	   no_argument,	      NULL, 'I' },
		{ "fill",	   no_argument,	      NULL, 'F' },
		{ "checksum",	   no_argument,	      NULL, 'C' },
		{ "help",	   no_argument,	      NULL, 'h' },
		{ }
	};
	__u64 qd;
	int c;

	*o = (struct opts) {
		.gpu	= "/dev/nrp-gpu0",
		.size	= 1ULL << 30,
		.chunk	= 1ULL << 20,
		.qd	= 8,
		.seed	= 0x6e72702d636b7074ULL,	/* "nrp-ckpt" */
	};
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			o->gpu = optarg;
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 's':
			o->size = parse_size("--size", optarg);
			o->size_set = 1;
			break;
		case 'o':
			o->offset = parse_size("--offset", optarg);
			break;
		case 'c':
			o->chunk = parse_size("--chunk", optarg);
			break;
		case 'q':
			qd = parse_size("--qd", optarg);
			if (!qd || qd > NRP_GPU_XFER_MAX_QD)
				ckpt_usage_err("--qd must be 1..%d", NRP_GPU_XFER_MAX_QD);
			o->qd = qd;
			break;
		case 'S':
			o->seed = parse_size("--seed", optarg);
			break;
		case 'A':
			o->region_a = parse_size("--region-a", optarg);
			break;
		case 'B':
			o->region_b = parse_size("--region-b", optarg);
			o->region_b_set = 1;
			break;
		case 't':
			o->stats = optarg;
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
		case 'I':
		case 'F':
		case 'C':
			if (o->mode != MODE_CHECKPOINT)
				ckpt_usage_err("--info, --fill and --checksum exclude each other");
			o->mode = c == 'I' ? MODE_INFO : c == 'F' ? MODE_FILL : MODE_CHECKSUM;
			break;
		case 'h':
			print_help();
			exit(0);
		default:
			ckpt_usage_err("bad option");
		}
	}
	if (optind < argc)
		ckpt_usage_err("unexpected argument '%s'", argv[optind]);
	if (o->mode == MODE_CHECKPOINT && !o->dev)
		ckpt_usage_err("--dev is required");
	if ((o->mode == MODE_FILL || o->mode == MODE_CHECKSUM) && !o->size_set)
		ckpt_usage_err("--fill and --checksum need --size");
	if (!o->size || !o->chunk)
		ckpt_usage_err("--size and --chunk must not be 0");
	if (!o->region_b_set)
		o->region_b = o->region_a + o->size;
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
		secs = gpu_fill(gfd, o->region_a, o->size, o->seed);
		ckpt_info("expected %#018llx (fill of %llu bytes at %#llx, seed %#llx: %.3f s)",
			  expected_checksum(o->seed, o->size), o->size,
			  o->region_a, o->seed, secs);
		break;
	case MODE_CHECKSUM:
		sum = gpu_checksum(gfd, o->region_a, o->size, &secs);
		ckpt_info("checksum %#018llx (%llu bytes at %#llx: %.3f s)",
			  sum, o->size, o->region_a, secs);
		break;
	case MODE_CHECKPOINT:
		break;
	}
	return 0;
}

/* Friendlier than the kernel's -ERANGE for the usual mistakes. */
static void check_layout(const struct opts *o, const struct nrp_gpu_info *info)
{
	__u64 w = info->window_size;

	if (o->size > w / 2)
		ckpt_err("the GPU window is %llu MiB: regions A and B of %llu MiB each do not fit; give QEMU a larger ivshmem memory backend (size=2G for a 1 GiB checkpoint) or pass a smaller --size",
			 w >> 20, o->size >> 20);
	if (o->region_a > w - o->size || o->region_b > w - o->size)
		ckpt_err("region A (%#llx) or B (%#llx) + %llu bytes lies outside the %llu-byte window",
			 o->region_a, o->region_b, o->size, w);
	if (o->region_a < o->region_b + o->size &&
	    o->region_b < o->region_a + o->size)
		ckpt_err("regions A (%#llx) and B (%#llx) of %llu bytes overlap",
			 o->region_a, o->region_b, o->size);
}

int main(int argc, char **argv)
{
	struct nrp_gpu_info info = { 0 };
	struct stat_set before, after;
	double t_fill, t_sum, t_write, t_flush, t_read, t;
	__u64 dev_size = 0, want, sum_a, sum_b, bios_w, bios_r;
	const char *stats = NULL;
	char stats_buf[PATH_MAX];
	int gfd, dfd, err, have_stats = 0;
	struct opts o;
	struct stat st;
	long long bad;
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--user"))
			return user_main(argc, argv);
	parse(argc, argv, &o);

	gfd = open(o.gpu, O_RDWR | O_CLOEXEC);
	if (gfd < 0)
		ckpt_err("%s: %s%s", o.gpu, strerror(errno),
			 errno == ENOENT ? " (modprobe nrp_gpu, with a QEMU ivshmem device)" : "");
	if (ioctl(gfd, NRP_GPU_IOC_INFO, &info))
		ckpt_err("%s: INFO: %s (not an nrp_gpu device?)", o.gpu,
			 strerror(errno));
	if (info.version != NRP_GPU_UAPI_VERSION)
		ckpt_err("%s speaks UAPI version %u, this tool version %d",
			 o.gpu, info.version, NRP_GPU_UAPI_VERSION);
	if (o.mode != MODE_CHECKPOINT)
		return run_mode(gfd, &o, &info);
	ckpt_info("gpu      %s (%s): BAR %llu MiB, window %llu MiB at BAR offset %#llx, P2PDMA pages %s",
		  o.gpu, info.pci_name, info.bar_size >> 20,
		  info.window_size >> 20, info.window_bar_offset,
		  info.flags & NRP_GPU_INFO_P2PDMA ? "yes" : "NO");
	check_layout(&o, &info);

	/* O_EXCL: never write under a mounted filesystem. */
	dfd = open(o.dev, O_RDWR | O_EXCL | O_CLOEXEC);
	if (dfd < 0)
		ckpt_err("%s: %s", o.dev, strerror(errno));
	if (fstat(dfd, &st) || !S_ISBLK(st.st_mode))
		ckpt_err("%s: not a block device", o.dev);
	if (ioctl(dfd, BLKGETSIZE64, &dev_size))
		ckpt_err("%s: BLKGETSIZE64: %s", o.dev, strerror(errno));
	if (o.offset > dev_size || o.size > dev_size - o.offset)
		ckpt_err("%s has %llu bytes: %llu bytes at offset %llu do not fit",
			 o.dev, dev_size, o.size, o.offset);
	ckpt_info("dev      %s: %llu MiB; checkpoint of %.1f MiB at offset %llu, A at %#llx, B at %#llx",
		  o.dev, dev_size >> 20, o.size / MIB, o.offset, o.region_a,
		  o.region_b);

	if (!o.stats)
		stats = stats_find(o.dev, stats_buf, sizeof(stats_buf));
	else if (strcmp(o.stats, "none"))
		stats = o.stats;
	if (stats) {
		err = stats_read(stats, &before);
		have_stats = !err;
		if (err)
			ckpt_info("stats    none: cannot read %s: %s", stats,
				  strerror(-err));
	}

	/*
	 * B gets another pattern first, so that a read that silently moved
	 * nothing cannot pass for a good one.
	 */
	gpu_fill(gfd, o.region_b, o.size, ~o.seed);
	t_fill = gpu_fill(gfd, o.region_a, o.size, o.seed);
	ckpt_info("fill     region A with seed %#llx: %.3f s", o.seed, t_fill);
	sum_a = gpu_checksum(gfd, o.region_a, o.size, &t_sum);
	want = expected_checksum(o.seed, o.size);
	if (sum_a != want)
		ckpt_err("region A checksum %#llx, but the pattern gives %#llx: the BAR does not hold what FILL wrote",
			 sum_a, want);
	ckpt_info("checksum region A %#018llx, as the pattern predicts: %.3f s",
		  sum_a, t_sum);

	t_write = xfer(gfd, dfd, &o, NRP_GPU_XFER_WRITE, o.region_a, "write",
		       &bios_w);
	/* a checkpoint is one only once it is durable */
	t = now();
	if (fsync(dfd))
		ckpt_err("%s: flush: %s", o.dev, strerror(errno));
	t_flush = now() - t;
	ckpt_info("flush    %.3f s", t_flush);
	t_read = xfer(gfd, dfd, &o, NRP_GPU_XFER_READ, o.region_b, "read",
		      &bios_r);
	sum_b = gpu_checksum(gfd, o.region_b, o.size, &t_sum);
	ckpt_info("checksum region B %#018llx: %.3f s", sum_b, t_sum);

	if (have_stats) {
		if (stats_read(stats, &after))
			ckpt_info("stats    %s vanished during the run", stats);
		else
			stats_print(stats, &before, &after);
	}

	if (sum_b != sum_a || o.verify_chunks) {
		bad = compare_chunks(gfd, &o);
		if (bad >= 0)
			ckpt_err("MISMATCH: region B differs from A, first in chunk %lld (device offset %llu)",
				 bad, o.offset + bad * o.chunk);
		if (sum_b != sum_a)
			ckpt_err("MISMATCH: checksums differ (%#llx vs %#llx) but no chunk does",
				 sum_a, sum_b);
		ckpt_info("compare  all %llu chunks of A and B match",
			  (o.size + o.chunk - 1) / o.chunk);
	}
	ckpt_info("checkpoint verified: %.1f MiB, write+flush %.3f s (%.1f MiB/s, %llu bios), read %.3f s (%.1f MiB/s, %llu bios)",
		  o.size / MIB, t_write + t_flush,
		  mib_s(o.size, t_write + t_flush), bios_w, t_read,
		  mib_s(o.size, t_read), bios_r);
	close(dfd);
	close(gfd);
	return 0;
}
