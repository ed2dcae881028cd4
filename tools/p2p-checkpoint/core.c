// SPDX-License-Identifier: GPL-2.0
/*
 * p2p-checkpoint: the core both halves drive. It reads the options they
 * share, opens the block device, finds the transport's counters and runs
 * a checkpoint: fill, write, flush, read back, verify, each step timed as
 * a phase with the counters before and after it. What moves the bytes and
 * where they live is the half's: the in-kernel mover of nrp_gpu on the GPU
 * stand-in's window (p2p-checkpoint.c), or O_DIRECT from memory mapped into
 * this process (user.c).
 */
#define _GNU_SOURCE
#include "p2p-checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

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

/* --- the options both halves take ---------------------------------------- */

/* The defaults: the half's size, seed and deepest queue; 1 MiB chunks, qd 8. */
void ckpt_opts_init(struct ckpt_opts *o, __u64 size, __u64 seed,
		    unsigned int max_qd)
{
	*o = (struct ckpt_opts) {
		.size	= size,
		.chunk	= 1ULL << 20,
		.qd	= 8,
		.max_qd	= max_qd,
		.seed	= seed,
	};
}

static const struct option common_lopts[] = {
	{ "dev",	required_argument, NULL, 'd' },
	{ "size",	required_argument, NULL, 's' },
	{ "offset",	required_argument, NULL, 'o' },
	{ "chunk",	required_argument, NULL, 'c' },
	{ "qd",		required_argument, NULL, 'q' },
	{ "seed",	required_argument, NULL, 'S' },
	{ "stats",	required_argument, NULL, 't' },
	{ "help",	no_argument,	   NULL, 'h' },
	{ }
};

#define LOPTS_MAX	32

void ckpt_parse(int argc, char **argv, const struct option *own_lopts,
		struct ckpt_opts *o, void (*help)(void),
		int (*own)(int c, void *priv), void *priv)
{
	struct option lopts[LOPTS_MAX] = { { 0 } };
	size_t i, n = 0;
	__u64 qd;
	int c;

	for (i = 0; common_lopts[i].name; i++)
		lopts[n++] = common_lopts[i];
	for (i = 0; own_lopts[i].name; i++) {
		if (n + 1 >= LOPTS_MAX)
			ckpt_err("more than %d options", LOPTS_MAX - 1);
		lopts[n++] = own_lopts[i];
	}
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
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
			if (!qd || qd > o->max_qd)
				ckpt_usage_err("--qd must be 1..%u", o->max_qd);
			o->qd = qd;
			break;
		case 'S':
			o->seed = parse_size("--seed", optarg);
			break;
		case 't':
			o->stats = optarg;
			break;
		case 'h':
			help();
			exit(0);
		default:
			if (c == '?' || !own(c, priv))
				ckpt_usage_err("bad option");
		}
	}
	if (optind < argc)
		ckpt_usage_err("unexpected argument '%s'", argv[optind]);
}

/* --- the block device ------------------------------------------------------ */

int ckpt_open_dev(const struct ckpt_opts *o, int flags, const char *hint,
		  __u64 *dev_size)
{
	struct stat st;
	int fd;

	/* O_EXCL: never write under a mounted filesystem */
	fd = open(o->dev, O_RDWR | O_EXCL | O_CLOEXEC | flags);
	if (fd < 0)
		ckpt_err("%s: %s", o->dev, strerror(errno));
	if (fstat(fd, &st) || !S_ISBLK(st.st_mode))
		ckpt_err("%s: not a block device%s", o->dev, hint);
	if (ioctl(fd, BLKGETSIZE64, dev_size))
		ckpt_err("%s: BLKGETSIZE64: %s", o->dev, strerror(errno));
	if (o->offset > *dev_size || o->size > *dev_size - o->offset)
		ckpt_err("%s has %llu bytes: %llu bytes at offset %llu do not fit",
			 o->dev, *dev_size, o->size, o->offset);
	return fd;
}

/* --- the transport's counters ---------------------------------------------- */

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
static const char *stats_find(const char *dev, char *buf, size_t len)
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

/*
 * The counters to show: --stats FILE, none for --stats none, else those
 * of the controller behind block device @dev (NULL: not known).
 */
const char *ckpt_stats_path(const struct ckpt_opts *o, const char *dev,
			    char *buf, size_t len)
{
	if (o->stats)
		return strcmp(o->stats, "none") ? o->stats : NULL;
	return dev ? stats_find(dev, buf, len) : NULL;
}

/* --- the checkpoint -------------------------------------------------------- */

void ckpt_phase_begin(struct ckpt *c, struct ckpt_phase *p, const char *name)
{
	p->name = name;
	p->have = c->stats && !stats_read(c->stats, &p->before);
	p->secs = now();
}

void ckpt_phase_end(struct ckpt *c, struct ckpt_phase *p)
{
	p->secs = now() - p->secs;
	if (p->have)
		p->have = !stats_read(c->stats, &p->after);
}

static void phase_print(const struct ckpt_phase *p, __u64 bytes)
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

int ckpt_run(struct ckpt *c, const struct ckpt_ops *ops)
{
	struct stat_set probe;
	int err;

	if (c->stats) {
		err = stats_read(c->stats, &probe);
		if (err) {
			ckpt_info("stats    none: cannot read %s: %s", c->stats,
				  strerror(-err));
			c->stats = NULL;
		}
	}

	ops->fill(c);
	c->t_write = ops->xfer(c, 1, &c->write);
	/* a checkpoint is one only once it is durable */
	ckpt_phase_begin(c, &c->flush, ops->flush);
	if (fsync(c->fd))
		ckpt_err("%s: %s: %s", c->target, ops->flush, strerror(errno));
	ckpt_phase_end(c, &c->flush);
	c->t_flush = c->flush.secs;
	ckpt_info("%-8s %.3f s", ops->flush, c->t_flush);
	/* the read-back lands on another pattern: one that moved nothing fails */
	ops->refill(c);
	c->t_read = ops->xfer(c, 0, &c->read);
	if (ops->after_read)
		ops->after_read(c);

	if (ops->phase_lines) {
		phase_print(&c->write, c->o->size);
		phase_print(&c->flush, 0);
		phase_print(&c->read, c->o->size);
	}
	if (c->write.have && c->read.have)
		stats_print(c->stats, &c->write.before, &c->read.after);
	else if (c->stats)
		ckpt_info("stats    %s vanished during the run", c->stats);
	ops->verify(c);
	return 0;
}
