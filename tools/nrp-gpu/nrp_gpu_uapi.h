/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nrp_gpu: ioctl interface of the GPU-memory stand-in (/dev/nrp-gpuN).
 *
 * A QEMU ivshmem device plays the GPU: its BAR2 is registered as PCI
 * P2PDMA memory, and the driver owns a window of it the way a GPU driver
 * owns its VRAM. All offsets below are byte offsets into that window.
 *
 * Shared by the kernel module and by userspace (tools/p2p-checkpoint), so
 * it uses only the __u64-style types and no kernel-internal headers. The
 * pattern and checksum helpers are here, not in the tools, so that
 * userspace can predict exactly what the kernel writes and computes.
 */
#ifndef _NRP_GPU_UAPI_H
#define _NRP_GPU_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NRP_GPU_UAPI_VERSION	3

/*
 * Flag values are spelled out: BIT() is not available to userspace.
 *
 * FILL and CHECKSUM work on whole 64-bit words.
 */
#define NRP_GPU_WORD		8

/* nrp_gpu_info.flags */
#define NRP_GPU_INFO_P2PDMA	0x1U		/* window pages are P2PDMA pages */
#define NRP_GPU_INFO_PUBLISHED	0x2U		/* BAR published for other users */

struct nrp_gpu_info {
	__u32 version;		/* out: NRP_GPU_UAPI_VERSION */
	__u32 flags;		/* out: NRP_GPU_INFO_* */
	__u64 bar_size;		/* out: size of BAR2 */
	__u64 window_size;	/* out: bytes usable at offsets 0..window_size */
	__u64 window_bar_offset;/* out: where the window starts in BAR2 */
	__u64 window_bus_addr;	/* out: PCI bus address of window offset 0 */
	char pci_name[32];	/* out: e.g. "0000:00:04.0" */
	__u64 reserved[4];	/* out: zero */
};

struct nrp_gpu_fill {
	__u64 offset;		/* in: window offset, multiple of 8 */
	__u64 length;		/* in: bytes, multiple of 8, not 0 */
	__u64 seed;		/* in: pattern seed, see nrp_gpu_pattern() */
	__u64 elapsed_ns;	/* out */
	__u64 reserved[2];	/* in: must be zero */
};

struct nrp_gpu_checksum {
	__u64 offset;		/* in: window offset, multiple of 8 */
	__u64 length;		/* in: bytes, multiple of 8, not 0 */
	__u64 checksum;		/* out: see nrp_gpu_csum_*() */
	__u64 elapsed_ns;	/* out */
	__u64 reserved[2];	/* in: must be zero */
};

/* nrp_gpu_xfer.dir */
#define NRP_GPU_XFER_WRITE	1	/* window -> block device */
#define NRP_GPU_XFER_READ	2	/* block device -> window */

/* nrp_gpu_xfer.flags */
/*
 * Submit even when the device's queue does not advertise PCI P2PDMA
 * (QUEUE_FLAG_PCI_P2PDMA). Only for devices that never DMA (brd, which
 * copies with the CPU) or for testing what a driver does with such pages.
 */
#define NRP_GPU_XFER_FORCE	0x1U
/*
 * Copy every page through a host-memory page first (a write copies the
 * window into it, a read copies it back into the window): what a user
 * without P2PDMA does, a bounce buffer. The bios carry host pages only,
 * so the queue flag is not needed.
 */
#define NRP_GPU_XFER_BOUNCE	0x2U
/*
 * Bounce only the window's odd pages: every bio mixes P2PDMA pages and
 * host pages, for testing how a driver maps such a request.
 */
#define NRP_GPU_XFER_MIX	0x4U
/*
 * Submit every chunk even after one failed, as a submitter that batches
 * its I/O and looks at the results at the end; status is still the first
 * error. For testing what becomes of bios submitted while a path is down.
 */
#define NRP_GPU_XFER_KEEP_GOING	0x8U
#define NRP_GPU_XFER_FLAGS	(NRP_GPU_XFER_FORCE | NRP_GPU_XFER_BOUNCE | \
				 NRP_GPU_XFER_MIX | NRP_GPU_XFER_KEEP_GOING)

/* nrp_gpu_xfer.result_flags */
#define NRP_GPU_XFER_QUEUE_P2P	0x1U		/* queue advertises P2PDMA */

#define NRP_GPU_XFER_MAX_CHUNK	(64ULL << 20)
#define NRP_GPU_XFER_MAX_QD	256

struct nrp_gpu_xfer {
	__s32 dev_fd;		/* in: block device, opened for read or write */
	__u32 dir;		/* in: NRP_GPU_XFER_WRITE or _READ */
	__u32 flags;		/* in: NRP_GPU_XFER_* */
	__u32 qd;		/* in: bios in flight, 1..NRP_GPU_XFER_MAX_QD */
	__u64 dev_offset;	/* in: bytes, logical-block aligned */
	__u64 window_offset;	/* in: bytes, logical-block aligned */
	__u64 length;		/* in: bytes, logical-block multiple, not 0 */
	__u64 chunk;		/* in: bytes per bio, logical-block multiple */
	__u64 bios;		/* out: bios submitted */
	__u64 bytes;		/* out: bytes submitted */
	__u64 elapsed_ns;	/* out: first submission to last completion */
	__s32 status;		/* out: 0 or the first I/O error (-errno) */
	__u32 logical_block_size;	/* out */
	__u32 result_flags;	/* out: NRP_GPU_XFER_QUEUE_P2P */
	__u32 pad;		/* in: must be zero */
	__u64 copied;		/* out: bytes the CPU copied between the
				 * window and host memory (BOUNCE, MIX)
				 */
	__u64 reserved[3];	/* in: must be zero */
};

#define NRP_GPU_IOC_MAGIC	0xB7
#define NRP_GPU_IOC_INFO	_IOR(NRP_GPU_IOC_MAGIC, 0x00, struct nrp_gpu_info)
#define NRP_GPU_IOC_FILL	_IOWR(NRP_GPU_IOC_MAGIC, 0x01, struct nrp_gpu_fill)
#define NRP_GPU_IOC_CHECKSUM	_IOWR(NRP_GPU_IOC_MAGIC, 0x02, struct nrp_gpu_checksum)
#define NRP_GPU_IOC_XFER	_IOWR(NRP_GPU_IOC_MAGIC, 0x03, struct nrp_gpu_xfer)

/*
 * Word @idx (counted from the start of the filled range) of the FILL
 * pattern: splitmix64 of seed and index, so every word differs, any seed
 * gives a different image, and a range moved by whole words is detected.
 */
static inline __u64 nrp_gpu_pattern(__u64 seed, __u64 idx)
{
	__u64 z = seed + (idx + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * CHECKSUM: a 64-bit word-at-a-time hash (one xxhash64-style round per
 * word, chained, so word order matters). Not cryptographic; it only has
 * to catch lost, stale, shifted or corrupted data, and to run fast on a
 * TCG-emulated CPU, which a byte-wise CRC does not.
 */
static inline __u64 nrp_gpu_csum_init(__u64 length)
{
	return 0x27d4eb2f165667c5ULL ^ length;
}

static inline __u64 nrp_gpu_csum_step(__u64 h, __u64 word)
{
	h ^= word * 0xc2b2ae3d27d4eb4fULL;
	h = (h << 31) | (h >> 33);
	return h * 0x9e3779b185ebca87ULL + 0x85ebca77c2b2ae63ULL;
}

static inline __u64 nrp_gpu_csum_final(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

#endif /* _NRP_GPU_UAPI_H */
