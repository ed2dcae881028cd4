/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2p-checkpoint: the core both halves drive (core.c). p2p-checkpoint.c
 * moves the GPU stand-in's memory with the in-kernel mover of nrp_gpu (any
 * kernel with P2PDMA); user.c is an application's checkpoint writer that
 * maps P2P memory into its own address space and moves it with O_DIRECT
 * (Linux 6.2 and later).
 */
#ifndef P2P_CHECKPOINT_H
#define P2P_CHECKPOINT_H

/* __u64 is unsigned long long on every architecture: %llu fits it */
#define __SANE_USERSPACE_TYPES__
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/types.h>

#define PROG		"p2p-checkpoint"
#define MIB		(1024.0 * 1024.0)
#define STATS_DIR	"/sys/kernel/debug/nvme-rdma-p2p"
#define STATS_GLOB	STATS_DIR "/*/stats"
#define STATS_MAX	64

enum {
	EXIT_FAIL	= 1,
	EXIT_USAGE	= 2,
	/* the kernel would not let P2P memory reach the device */
	EXIT_REFUSED	= 3,
	/* O_DIRECT refused the buffer's alignment (user mode) */
	EXIT_ALIGN	= 5,
};

/*
 * Progress on stdout, complaints on stderr, in the order they happened
 * even when both go to one pipe; ckpt_err() also exits.
 */
#define ckpt_info(fmt, ...)	printf(fmt "\n", ##__VA_ARGS__)
#define ckpt_warn(fmt, ...)						\
	do {								\
		fflush(stdout);						\
		fprintf(stderr, PROG ": " fmt "\n", ##__VA_ARGS__);	\
	} while (0)
#define ckpt_err(fmt, ...)				\
	do {						\
		ckpt_warn(fmt, ##__VA_ARGS__);		\
		exit(EXIT_FAIL);			\
	} while (0)
#define ckpt_usage_err(fmt, ...)			\
	do {						\
		ckpt_warn(fmt " (see --help)", ##__VA_ARGS__);	\
		exit(EXIT_USAGE);			\
	} while (0)

struct stat_set {
	int n;
	char name[STATS_MAX][48];
	__u64 val[STATS_MAX];
};

__u64 parse_size(const char *opt, const char *s);
double now(void);
double cpu_seconds(void);
double mib_s(__u64 bytes, double secs);
int stats_read(const char *path, struct stat_set *s);
void stats_print(const char *path, const struct stat_set *a,
		 const struct stat_set *b);
__u64 stats_delta(const struct stat_set *a, const struct stat_set *b,
		  const char *name);

/* The options both halves take; each sets its defaults before parsing. */
struct ckpt_opts {
	const char *dev;	/* --dev */
	const char *stats;	/* --stats FILE|none, NULL: find them */
	__u64 size, offset, chunk, seed;
	unsigned int qd, max_qd;
	int size_set;		/* --size was given */
};

void ckpt_opts_init(struct ckpt_opts *o, __u64 size, __u64 seed,
		    unsigned int max_qd);
/*
 * getopt_long over the shared options (--dev, --size, --offset, --chunk,
 * --qd, --seed, --stats, --help) and the half's own @lopts: the shared
 * ones go into @o, --help calls @help and exits, and any other option
 * goes to @own with optarg set, which returns 0 for one it does not know.
 */
void ckpt_parse(int argc, char **argv, const struct option *lopts,
		struct ckpt_opts *o, void (*help)(void),
		int (*own)(int c, void *priv), void *priv);
/* Open --dev (O_EXCL, plus @flags) and check that the checkpoint fits. */
int ckpt_open_dev(const struct ckpt_opts *o, int flags, const char *hint,
		  __u64 *dev_size);
const char *ckpt_stats_path(const struct ckpt_opts *o, const char *dev,
			    char *buf, size_t len);

/* One step of a checkpoint: its time and the counters around it. */
struct ckpt_phase {
	const char *name;
	double secs;
	struct stat_set before, after;
	int have;
};

/* A checkpoint in progress; the half keeps its own state in priv. */
struct ckpt {
	const struct ckpt_opts *o;
	const char *target;	/* the device or file, as messages name it */
	int fd;
	const char *stats;	/* counters, or NULL */
	struct ckpt_phase write, flush, read;
	/* the seconds each step took, as the half measures them */
	double t_write, t_flush, t_read;
	void *priv;
};

/* What a half does at each step of ckpt_run(). */
struct ckpt_ops {
	const char *flush;	/* what the output calls the flush */
	int phase_lines;	/* print a "phase" line per step */
	/* put the pattern of seed where the checkpoint is written from */
	void (*fill)(struct ckpt *c);
	/* one direction inside @ph (ckpt_phase_begin/end); its seconds */
	double (*xfer)(struct ckpt *c, int write, struct ckpt_phase *ph);
	/* put another pattern where the checkpoint is read back to */
	void (*refill)(struct ckpt *c);
	void (*after_read)(struct ckpt *c);	/* optional */
	/* compare what came back, say so; exits on a mismatch */
	void (*verify)(struct ckpt *c);
};

void ckpt_phase_begin(struct ckpt *c, struct ckpt_phase *p, const char *name);
void ckpt_phase_end(struct ckpt *c, struct ckpt_phase *p);
/* fill, write, flush, refill, read, counters, verify */
int ckpt_run(struct ckpt *c, const struct ckpt_ops *ops);

int user_main(int argc, char **argv);

#endif /* P2P_CHECKPOINT_H */
