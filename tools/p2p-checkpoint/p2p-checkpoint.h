/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2p-checkpoint: what its two halves share. p2p-checkpoint.c moves the
 * GPU stand-in's memory with the in-kernel mover of nrp_gpu (any kernel
 * with P2PDMA); user.c is an application's checkpoint writer that maps
 * P2P memory into its own address space and moves it with O_DIRECT
 * (Linux 6.2 and later).
 */
#ifndef P2P_CHECKPOINT_H
#define P2P_CHECKPOINT_H

/* __u64 is unsigned long long on every architecture: %llu fits it */
#define __SANE_USERSPACE_TYPES__
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
const char *stats_find(const char *dev, char *buf, size_t len);
__u64 stats_delta(const struct stat_set *a, const struct stat_set *b,
		  const char *name);

int user_main(int argc, char **argv);

#endif /* P2P_CHECKPOINT_H */
