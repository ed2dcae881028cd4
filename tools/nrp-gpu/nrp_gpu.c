// SPDX-License-Identifier: GPL-2.0
/*
 * nrp_gpu: a GPU stand-in for testing block I/O on PCI P2PDMA memory.
 *
 * A GPU driver that wants its VRAM to be the source or target of storage
 * I/O (GPUDirect Storage style) registers its BAR as P2PDMA memory, which
 * gives the BAR ZONE_DEVICE struct pages, and then builds bios straight
 * from those pages. This module does the same with a QEMU ivshmem device
 * (1af4:1110), whose BAR2 is plain host RAM behind a 64-bit prefetchable
 * BAR, so that a guest without a GPU can drive the nvme-rdma-p2p host
 * transport with genuine P2PDMA pages.
 *
 * Per device it owns a window of BAR2 (all of it unless window_mb says
 * otherwise; the rest stays in the published pool for other P2PDMA users)
 * and offers /dev/nrp-gpuN with the ioctls of nrp_gpu_uapi.h: the CPU
 * fills and checksums the window, and XFER moves it to or from a block
 * device with bios whose pages are the window's own pages - no bounce
 * buffer, no copy.
 *
 * Linux 6.1 has no userspace P2PDMA (FOLL_PCI_P2PDMA came later), so the
 * pages can reach a block device only from an in-kernel submitter like
 * this one, the way nvmet does with its p2pmem. From 6.2 on, publishing
 * the BAR is also what lets user space map the part of it outside the
 * window (window_mb) through /sys/bus/pci/devices/<bdf>/p2pmem/allocate
 * and do O_DIRECT from it, as GPU storage stacks do.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/ktime.h>
#include <linux/memremap.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/pagemap.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "nrp_gpu_uapi.h"

/* ivshmem: BAR0 registers, BAR1 MSI-X, BAR2 the shared memory. */
#define NRP_GPU_IVSHMEM_DEVICE	0x1110
#define NRP_GPU_BAR		2

/* CPU loops look for signals and yield once per this many bytes. */
#define NRP_GPU_CPU_STEP	SZ_1M

/*
 * An uninterruptible wait for bios wakes up this often, so that a long
 * transport reconnect is not reported as a hung task.
 */
#define NRP_GPU_WAIT_SLICE	(10 * HZ)

static unsigned int nrp_gpu_window_mb;
module_param_named(window_mb, nrp_gpu_window_mb, uint, 0444);
MODULE_PARM_DESC(window_mb,
		 "MiB of BAR2 owned by /dev/nrp-gpuN (default 0: the whole BAR); the rest is published for other P2PDMA users, user space included");

static DEFINE_IDA(nrp_gpu_ida);

struct nrp_gpu {
	struct kref		kref;
	struct pci_dev		*pdev;
	/*
	 * Serialises the ioctls with each other and with remove(), which
	 * sets @removed and frees the window under it.
	 */
	struct mutex		lock;
	bool			removed;
	int			id;
	/* "nrp-gpu" and any id ida_alloc() can return (gcc 14's W=1 checks) */
	char			name[sizeof("nrp-gpu") + 10];
	struct miscdevice	misc;
	void			*window;
	size_t			window_size;
	u64			window_bar_off;
	pci_bus_addr_t		window_bus;
};

/* Bios of one XFER in flight; lives on the submitter's stack. */
struct nrp_gpu_xfer_ctx {
	spinlock_t		lock;	/* inflight, status; see end_io */
	wait_queue_head_t	wait;
	unsigned int		inflight;
	blk_status_t		status;
	/* BOUNCE/MIX: finished bios whose host pages the submitter frees */
	struct llist_head	bounced;
};

/*
 * The host pages of one bio of a BOUNCE or MIX transfer. Completion only
 * queues it: copying back into the window and freeing happen in the
 * submitter, in process context, where the copy is charged to the task
 * that asked for it.
 */
struct nrp_gpu_bounce {
	struct llist_node	node;
	struct nrp_gpu_xfer_ctx	*ctx;
	blk_status_t		status;
	unsigned int		nr;
	struct nrp_gpu_bounce_seg {
		struct page	*page;
		void		*win;	/* where the bytes live in the window */
		unsigned int	off;
		unsigned int	len;
	} seg[];
};

/* Refuse a request from userspace, saying why in the kernel log. */
static __printf(3, 4) int nrp_gpu_reject(struct nrp_gpu *gpu, int err,
					 const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	dev_info_ratelimited(gpu->misc.this_device, "%pV", &vaf);
	va_end(args);
	return err;
}

/* [off, off + len) must be a non-empty, @align-aligned part of the window. */
static int nrp_gpu_check_window(struct nrp_gpu *gpu, const char *op, u64 off,
				u64 len, u64 align)
{
	u64 end;

	if (!len)
		return nrp_gpu_reject(gpu, -EINVAL, "%s: length is 0\n", op);
	if (!IS_ALIGNED(off, align) || !IS_ALIGNED(len, align))
		return nrp_gpu_reject(gpu, -EINVAL,
				      "%s: window offset %#llx or length %#llx not a multiple of %llu\n",
				      op, off, len, align);
	if (check_add_overflow(off, len, &end) || end > gpu->window_size)
		return nrp_gpu_reject(gpu, -ERANGE,
				      "%s: window range %#llx+%#llx outside the %#zx-byte window\n",
				      op, off, len, gpu->window_size);
	return 0;
}

static int nrp_gpu_cpu_step(u64 i)
{
	if ((i + 1) % (NRP_GPU_CPU_STEP / NRP_GPU_WORD))
		return 0;
	if (fatal_signal_pending(current))
		return -EINTR;
	cond_resched();
	return 0;
}

static long nrp_gpu_ioctl_info(struct nrp_gpu *gpu,
			       struct nrp_gpu_info __user *uarg)
{
	struct nrp_gpu_info info = {
		.version		= NRP_GPU_UAPI_VERSION,
		.flags			= NRP_GPU_INFO_PUBLISHED,
		.bar_size		= pci_resource_len(gpu->pdev, NRP_GPU_BAR),
		.window_size		= gpu->window_size,
		.window_bar_offset	= gpu->window_bar_off,
		.window_bus_addr	= gpu->window_bus,
	};

	if (is_pci_p2pdma_page(virt_to_page(gpu->window)))
		info.flags |= NRP_GPU_INFO_P2PDMA;
	strscpy(info.pci_name, pci_name(gpu->pdev), sizeof(info.pci_name));
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long nrp_gpu_ioctl_fill(struct nrp_gpu *gpu,
			       struct nrp_gpu_fill __user *uarg)
{
	struct nrp_gpu_fill f;
	u64 *p, i, words, start;
	int ret = 0;

	if (copy_from_user(&f, uarg, sizeof(f)))
		return -EFAULT;
	if (memchr_inv(f.reserved, 0, sizeof(f.reserved)))
		return nrp_gpu_reject(gpu, -EINVAL, "fill: reserved fields not zero\n");
	ret = nrp_gpu_check_window(gpu, "fill", f.offset, f.length, NRP_GPU_WORD);
	if (ret)
		return ret;

	p = gpu->window + f.offset;
	words = f.length / NRP_GPU_WORD;
	start = ktime_get_ns();
	for (i = 0; i < words; i++) {
		p[i] = nrp_gpu_pattern(f.seed, i);
		ret = nrp_gpu_cpu_step(i);
		if (ret)
			return ret;
	}
	f.elapsed_ns = ktime_get_ns() - start;
	return copy_to_user(uarg, &f, sizeof(f)) ? -EFAULT : 0;
}

static long nrp_gpu_ioctl_checksum(struct nrp_gpu *gpu,
				   struct nrp_gpu_checksum __user *uarg)
{
	struct nrp_gpu_checksum c;
	u64 *p, i, words, start, h;
	int ret;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (memchr_inv(c.reserved, 0, sizeof(c.reserved)))
		return nrp_gpu_reject(gpu, -EINVAL, "checksum: reserved fields not zero\n");
	ret = nrp_gpu_check_window(gpu, "checksum", c.offset, c.length,
				   NRP_GPU_WORD);
	if (ret)
		return ret;

	p = gpu->window + c.offset;
	words = c.length / NRP_GPU_WORD;
	start = ktime_get_ns();
	h = nrp_gpu_csum_init(c.length);
	for (i = 0; i < words; i++) {
		h = nrp_gpu_csum_step(h, p[i]);
		ret = nrp_gpu_cpu_step(i);
		if (ret)
			return ret;
	}
	c.checksum = nrp_gpu_csum_final(h);
	c.elapsed_ns = ktime_get_ns() - start;
	return copy_to_user(uarg, &c, sizeof(c)) ? -EFAULT : 0;
}

/*
 * An open block device file's mapping is the device's own page cache,
 * whose host inode leads to the device.
 */
static struct block_device *nrp_gpu_file_bdev(struct file *file)
{
	return I_BDEV(file->f_mapping->host);
}

/*
 * The block device file behind @fd, held for the whole transfer: the
 * caller proves its right to the device by having opened it with @mode,
 * and the file keeps the device open until we put it. Going through the
 * caller's file rather than opening the device again also keeps us off
 * the block layer's open/close API, which changes from kernel to kernel.
 */
static struct file *nrp_gpu_get_bdev_file(struct nrp_gpu *gpu, int fd,
					  fmode_t mode)
{
	struct file *file;
	int ret;

	file = fget(fd);
	if (!file)
		return ERR_PTR(nrp_gpu_reject(gpu, -EBADF, "xfer: dev_fd %d is not open\n", fd));
	if (!S_ISBLK(file_inode(file)->i_mode)) {
		ret = nrp_gpu_reject(gpu, -ENOTBLK, "xfer: dev_fd %d is not a block device\n", fd);
		goto out_fput;
	}
	if ((file->f_mode & mode) != mode) {
		ret = nrp_gpu_reject(gpu, -EBADF, "xfer: dev_fd %d is not open for %s\n",
				     fd, mode & FMODE_WRITE ? "writing" : "reading");
		goto out_fput;
	}
	if ((mode & FMODE_WRITE) && bdev_read_only(nrp_gpu_file_bdev(file))) {
		ret = nrp_gpu_reject(gpu, -EROFS, "xfer: %pg is read-only\n",
				     nrp_gpu_file_bdev(file));
		goto out_fput;
	}
	return file;

out_fput:
	fput(file);
	return ERR_PTR(ret);
}

/* Every byte of a transfer is checked before the first bio is built. */
static int nrp_gpu_xfer_check(struct nrp_gpu *gpu, struct block_device *bdev,
			      struct nrp_gpu_xfer *x)
{
	unsigned int lbs = bdev_logical_block_size(bdev);
	unsigned int dma_mask = bdev_dma_alignment(bdev);
	u64 dev_end;
	int ret;

	x->logical_block_size = lbs;
	if (blk_queue_pci_p2pdma(bdev_get_queue(bdev)))
		x->result_flags |= NRP_GPU_XFER_QUEUE_P2P;

	ret = nrp_gpu_check_window(gpu, "xfer", x->window_offset, x->length, lbs);
	if (ret)
		return ret;
	if (!IS_ALIGNED(x->dev_offset, lbs))
		return nrp_gpu_reject(gpu, -EINVAL,
				      "xfer: device offset %#llx not a multiple of %pg's %u-byte logical block\n",
				      x->dev_offset, bdev, lbs);
	if (!x->chunk || !IS_ALIGNED(x->chunk, lbs) ||
	    x->chunk > NRP_GPU_XFER_MAX_CHUNK)
		return nrp_gpu_reject(gpu, -EINVAL,
				      "xfer: chunk %llu must be a non-zero multiple of %u up to %llu\n",
				      x->chunk, lbs, NRP_GPU_XFER_MAX_CHUNK);
	/* Each bio starts at window_offset + k * chunk. */
	if ((x->window_offset | x->chunk) & dma_mask)
		return nrp_gpu_reject(gpu, -EINVAL,
				      "xfer: window offset %#llx or chunk %#llx breaks %pg's DMA alignment %#x\n",
				      x->window_offset, x->chunk, bdev, dma_mask + 1);
	if (check_add_overflow(x->dev_offset, x->length, &dev_end) ||
	    dev_end > bdev_nr_bytes(bdev))
		return nrp_gpu_reject(gpu, -ERANGE,
				      "xfer: device range %#llx+%#llx beyond the end of %pg (%lld bytes)\n",
				      x->dev_offset, x->length, bdev, bdev_nr_bytes(bdev));

	/*
	 * The queue flag is the driver's promise that it maps P2PDMA pages
	 * with pci_p2pdma_map_sg() (or does no DMA at all); without it the
	 * BAR's bus address could be handed to a DMA engine as if it were
	 * RAM. nvmet checks the same flag before using p2pmem.
	 */
	if ((x->flags & NRP_GPU_XFER_BOUNCE) && (x->flags & NRP_GPU_XFER_MIX))
		return nrp_gpu_reject(gpu, -EINVAL,
				      "xfer: BOUNCE and MIX exclude each other\n");
	if (!(x->result_flags & NRP_GPU_XFER_QUEUE_P2P) &&
	    !(x->flags & (NRP_GPU_XFER_FORCE | NRP_GPU_XFER_BOUNCE)))
		return nrp_gpu_reject(gpu, -EOPNOTSUPP,
				      "xfer: %pg does not support PCI P2PDMA (no QUEUE_FLAG_PCI_P2PDMA); refusing to submit BAR pages without FORCE\n",
				      bdev);
	return 0;
}

/*
 * What O_DIRECT does around its bios, so that buffered users of the
 * device stay coherent: dirty cached data of the range reaches the device
 * first, and a write drops the cached copies it is about to make stale.
 */
static int nrp_gpu_xfer_cache_before(struct nrp_gpu *gpu, struct file *file,
				     const struct nrp_gpu_xfer *x)
{
	struct block_device *bdev = nrp_gpu_file_bdev(file);
	struct address_space *mapping = file->f_mapping;
	loff_t end = x->dev_offset + x->length - 1;
	int ret;

	ret = filemap_write_and_wait_range(mapping, x->dev_offset, end);
	if (ret || x->dir != NRP_GPU_XFER_WRITE)
		return ret;
	ret = invalidate_inode_pages2_range(mapping, x->dev_offset >> PAGE_SHIFT,
					    end >> PAGE_SHIFT);
	if (ret)
		return nrp_gpu_reject(gpu, ret,
				      "xfer: cached pages of %pg in %#llx+%#llx are busy: %d\n",
				      bdev, x->dev_offset, x->length, ret);
	return 0;
}

/* A buffered reader may have cached the old data while the bios ran. */
static void nrp_gpu_xfer_cache_after(struct nrp_gpu *gpu, struct file *file,
				     const struct nrp_gpu_xfer *x)
{
	struct block_device *bdev = nrp_gpu_file_bdev(file);
	struct address_space *mapping = file->f_mapping;
	loff_t end = x->dev_offset + x->length - 1;

	if (x->dir == NRP_GPU_XFER_WRITE && mapping->nrpages &&
	    invalidate_inode_pages2_range(mapping, x->dev_offset >> PAGE_SHIFT,
					  end >> PAGE_SHIFT))
		dev_warn_ratelimited(gpu->misc.this_device,
				     "xfer: stale cached pages of %pg left in %#llx+%#llx\n",
				     bdev, x->dev_offset, x->length);
}

static void nrp_gpu_xfer_done(struct nrp_gpu_xfer_ctx *ctx,
			      blk_status_t status)
{
	unsigned long flags;

	/*
	 * wake_up() under ctx->lock: the submitter re-checks under the same
	 * lock, so it cannot see the count drop, return and end the stack
	 * frame holding ctx before this function is done with it.
	 */
	spin_lock_irqsave(&ctx->lock, flags);
	if (status && !ctx->status)
		ctx->status = status;
	ctx->inflight--;
	wake_up(&ctx->wait);
	spin_unlock_irqrestore(&ctx->lock, flags);
}

static void nrp_gpu_xfer_end_io(struct bio *bio)
{
	struct nrp_gpu_xfer_ctx *ctx = bio->bi_private;
	blk_status_t status = bio->bi_status;

	bio_put(bio);
	nrp_gpu_xfer_done(ctx, status);
}

static void nrp_gpu_xfer_bounce_end_io(struct bio *bio)
{
	struct nrp_gpu_bounce *b = bio->bi_private;
	struct nrp_gpu_xfer_ctx *ctx = b->ctx;
	blk_status_t status = bio->bi_status;

	bio_put(bio);
	b->status = status;
	/* queued before the count drops, so the final drain sees it */
	llist_add(&b->node, &ctx->bounced);
	nrp_gpu_xfer_done(ctx, status);
}

static void nrp_gpu_bounce_free(struct nrp_gpu_bounce *b)
{
	unsigned int i;

	for (i = 0; i < b->nr; i++)
		__free_page(b->seg[i].page);
	kfree(b);
}

/*
 * Free the host pages of finished bios; after a successful read, first
 * copy their bytes to where they belong in the window. Returns the bytes
 * copied.
 */
static u64 nrp_gpu_bounce_drain(struct nrp_gpu_xfer_ctx *ctx, bool copy_back)
{
	struct llist_node *done = llist_del_all(&ctx->bounced);
	struct nrp_gpu_bounce *b, *tmp;
	u64 copied = 0;
	unsigned int i;

	llist_for_each_entry_safe(b, tmp, done, node) {
		for (i = 0; copy_back && !b->status && i < b->nr; i++) {
			memcpy(b->seg[i].win,
			       page_address(b->seg[i].page) + b->seg[i].off,
			       b->seg[i].len);
			copied += b->seg[i].len;
		}
		nrp_gpu_bounce_free(b);
	}
	return copied;
}

/*
 * Wait until fewer than @limit bios are in flight. Uninterruptible, as
 * the bios point at ctx, but in slices (see NRP_GPU_WAIT_SLICE).
 */
static void nrp_gpu_xfer_wait(struct nrp_gpu_xfer_ctx *ctx, unsigned int limit)
	__must_hold(&ctx->lock)
{
	while (!wait_event_lock_irq_timeout(ctx->wait, ctx->inflight < limit,
					    ctx->lock, NRP_GPU_WAIT_SLICE))
		;
}

/* Does the window page at @va go through host memory? */
static bool nrp_gpu_bounces(struct nrp_gpu *gpu, u32 flags, void *va)
{
	if (flags & NRP_GPU_XFER_BOUNCE)
		return true;
	/* odd pages of the window, whatever the chunking */
	return (flags & NRP_GPU_XFER_MIX) &&
	       (((va - gpu->window) >> PAGE_SHIFT) & 1);
}

/*
 * A bio for up to @len bytes of the window at @va, one page segment at a
 * time so that the block layer merges them as it sees fit. Returns the
 * bytes added in @added: less than @len when the bio filled up. Pages
 * that bounce get a host page each, recorded in *@bounce; a write copies
 * the window into them here and counts it in @x->copied.
 */
static struct bio *nrp_gpu_xfer_bio(struct nrp_gpu *gpu, struct block_device *bdev,
				    struct nrp_gpu_xfer *x, blk_opf_t opf,
				    void *va, u64 len, sector_t sector,
				    struct nrp_gpu_bounce **bounce, u64 *added)
{
	bool bouncing = x->flags & (NRP_GPU_XFER_BOUNCE | NRP_GPU_XFER_MIX);
	struct nrp_gpu_bounce *b = NULL;
	unsigned int nr_vecs;
	struct bio *bio;
	u64 done = 0;

	nr_vecs = min_t(u64, DIV_ROUND_UP(offset_in_page(va) + len, PAGE_SIZE),
			BIO_MAX_VECS);
	if (bouncing) {
		b = kzalloc(struct_size(b, seg, nr_vecs), GFP_KERNEL);
		if (!b)
			return NULL;
	}
	bio = bio_alloc(bdev, nr_vecs, opf, GFP_KERNEL);
	if (!bio)
		goto out_free_bounce;
	bio->bi_iter.bi_sector = sector;

	while (done < len) {
		void *p = va + done;
		unsigned int off = offset_in_page(p);
		unsigned int seg = min_t(u64, PAGE_SIZE - off, len - done);
		/* The window is in the direct map: its struct pages are real. */
		struct page *page = virt_to_page(p);

		if (b && nrp_gpu_bounces(gpu, x->flags, p)) {
			if (b->nr == nr_vecs)
				break;
			page = alloc_page(GFP_KERNEL);
			if (!page)
				goto out_put_bio;
			if (bio_add_page(bio, page, seg, off) != seg) {
				__free_page(page);
				break;
			}
			b->seg[b->nr++] = (struct nrp_gpu_bounce_seg) {
				.page = page, .win = p, .off = off, .len = seg,
			};
			if (op_is_write(opf)) {
				memcpy(page_address(page) + off, p, seg);
				x->copied += seg;
			}
		} else if (bio_add_page(bio, page, seg, off) != seg) {
			break;
		}
		done += seg;
	}
	*added = done;
	*bounce = b;
	return bio;

out_put_bio:
	bio_put(bio);
out_free_bounce:
	if (b)
		nrp_gpu_bounce_free(b);
	return NULL;
}

static int nrp_gpu_xfer_run(struct nrp_gpu *gpu, struct block_device *bdev,
			    struct nrp_gpu_xfer *x)
{
	struct nrp_gpu_xfer_ctx ctx = { .inflight = 0, .status = BLK_STS_OK };
	bool write = x->dir == NRP_GPU_XFER_WRITE;
	blk_opf_t opf = write ? REQ_OP_WRITE | REQ_SYNC | REQ_IDLE : REQ_OP_READ;
	void *va = gpu->window + x->window_offset;
	struct nrp_gpu_bounce *bounce;
	u64 pos = 0, added, start;
	struct bio *bio;
	int ret = 0;

	spin_lock_init(&ctx.lock);
	init_waitqueue_head(&ctx.wait);
	init_llist_head(&ctx.bounced);

	start = ktime_get_ns();
	while (pos < x->length) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		bio = nrp_gpu_xfer_bio(gpu, bdev, x, opf, va + pos,
				       min(x->length - pos, x->chunk),
				       (x->dev_offset + pos) >> SECTOR_SHIFT,
				       &bounce, &added);
		if (!bio) {
			ret = -ENOMEM;
			break;
		}
		/* An empty bio would spin here forever; never expected. */
		if (WARN_ON_ONCE(!added)) {
			bio_put(bio);
			if (bounce)
				nrp_gpu_bounce_free(bounce);
			ret = -EIO;
			break;
		}
		if (bounce) {
			bounce->ctx = &ctx;
			bio->bi_end_io = nrp_gpu_xfer_bounce_end_io;
			bio->bi_private = bounce;
		} else {
			bio->bi_end_io = nrp_gpu_xfer_end_io;
			bio->bi_private = &ctx;
		}

		spin_lock_irq(&ctx.lock);
		nrp_gpu_xfer_wait(&ctx, x->qd);
		if (ctx.status && !(x->flags & NRP_GPU_XFER_KEEP_GOING)) {
			/* stop at the first error; the drain below reports it */
			spin_unlock_irq(&ctx.lock);
			bio_put(bio);
			if (bounce)
				nrp_gpu_bounce_free(bounce);
			break;
		}
		ctx.inflight++;
		spin_unlock_irq(&ctx.lock);

		submit_bio(bio);
		x->bios++;
		pos += added;
		x->copied += nrp_gpu_bounce_drain(&ctx, !write);
	}

	spin_lock_irq(&ctx.lock);
	nrp_gpu_xfer_wait(&ctx, 1);
	spin_unlock_irq(&ctx.lock);
	x->copied += nrp_gpu_bounce_drain(&ctx, !write);

	x->elapsed_ns = ktime_get_ns() - start;
	x->bytes = pos;
	x->status = blk_status_to_errno(ctx.status);
	if (x->status) {
		dev_info_ratelimited(gpu->misc.this_device,
				     "xfer: %s %pg at %#llx failed after %llu bios: %d\n",
				     write ? "write to" : "read from",
				     bdev, x->dev_offset, x->bios, x->status);
		return x->status;
	}
	return ret;
}

static long nrp_gpu_ioctl_xfer(struct nrp_gpu *gpu,
			       struct nrp_gpu_xfer __user *uarg)
{
	struct block_device *bdev;
	struct nrp_gpu_xfer x;
	struct file *file;
	fmode_t mode;
	int ret;

	if (copy_from_user(&x, uarg, sizeof(x)))
		return -EFAULT;
	if (x.pad || memchr_inv(x.reserved, 0, sizeof(x.reserved)))
		return nrp_gpu_reject(gpu, -EINVAL, "xfer: reserved fields not zero\n");
	if (x.dir != NRP_GPU_XFER_WRITE && x.dir != NRP_GPU_XFER_READ)
		return nrp_gpu_reject(gpu, -EINVAL, "xfer: unknown direction %u\n", x.dir);
	if (x.flags & ~NRP_GPU_XFER_FLAGS)
		return nrp_gpu_reject(gpu, -EINVAL, "xfer: unknown flags %#x\n",
				      x.flags & ~NRP_GPU_XFER_FLAGS);
	if (!x.qd || x.qd > NRP_GPU_XFER_MAX_QD)
		return nrp_gpu_reject(gpu, -EINVAL, "xfer: qd %u not in 1..%u\n",
				      x.qd, NRP_GPU_XFER_MAX_QD);
	/* Outputs start from zero whatever the caller left in them. */
	x.bios = 0;
	x.bytes = 0;
	x.elapsed_ns = 0;
	x.status = 0;
	x.logical_block_size = 0;
	x.result_flags = 0;
	x.copied = 0;

	mode = x.dir == NRP_GPU_XFER_WRITE ? FMODE_WRITE : FMODE_READ;
	file = nrp_gpu_get_bdev_file(gpu, x.dev_fd, mode);
	if (IS_ERR(file))
		return PTR_ERR(file);
	bdev = nrp_gpu_file_bdev(file);

	ret = nrp_gpu_xfer_check(gpu, bdev, &x);
	if (ret)
		goto out_put_file;
	ret = nrp_gpu_xfer_cache_before(gpu, file, &x);
	if (ret)
		goto out_put_file;
	ret = nrp_gpu_xfer_run(gpu, bdev, &x);
	nrp_gpu_xfer_cache_after(gpu, file, &x);

out_put_file:
	fput(file);

	/* The caller wants the counts and the queue flag even on failure. */
	if (copy_to_user(uarg, &x, sizeof(x)))
		return -EFAULT;
	return ret;
}

static long nrp_gpu_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct nrp_gpu *gpu = file->private_data;
	void __user *argp = (void __user *)arg;
	long ret;

	if (mutex_lock_killable(&gpu->lock))
		return -EINTR;
	if (gpu->removed) {
		ret = -ENODEV;
		goto out_unlock;
	}

	switch (cmd) {
	case NRP_GPU_IOC_INFO:
		ret = nrp_gpu_ioctl_info(gpu, argp);
		break;
	case NRP_GPU_IOC_FILL:
		ret = nrp_gpu_ioctl_fill(gpu, argp);
		break;
	case NRP_GPU_IOC_CHECKSUM:
		ret = nrp_gpu_ioctl_checksum(gpu, argp);
		break;
	case NRP_GPU_IOC_XFER:
		ret = nrp_gpu_ioctl_xfer(gpu, argp);
		break;
	default:
		ret = -ENOTTY;
		break;
	}

out_unlock:
	mutex_unlock(&gpu->lock);
	return ret;
}

static void nrp_gpu_free(struct kref *kref)
{
	kfree(container_of(kref, struct nrp_gpu, kref));
}

static int nrp_gpu_open(struct inode *inode, struct file *file)
{
	/*
	 * misc_open() stored our miscdevice here and holds misc_mtx, which
	 * misc_deregister() in remove() needs too: gpu is still alive.
	 */
	struct nrp_gpu *gpu = container_of(file->private_data, struct nrp_gpu,
					   misc);

	kref_get(&gpu->kref);
	file->private_data = gpu;
	return 0;
}

static int nrp_gpu_release(struct inode *inode, struct file *file)
{
	struct nrp_gpu *gpu = file->private_data;

	kref_put(&gpu->kref, nrp_gpu_free);
	return 0;
}

static const struct file_operations nrp_gpu_fops = {
	.owner		= THIS_MODULE,
	.open		= nrp_gpu_open,
	.release	= nrp_gpu_release,
	.unlocked_ioctl	= nrp_gpu_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static int nrp_gpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	resource_size_t bar_size = pci_resource_len(pdev, NRP_GPU_BAR);
	size_t window_size;
	struct nrp_gpu *gpu;
	int ret;

	if (!IS_ENABLED(CONFIG_PCI_P2PDMA)) {
		pci_err(pdev, "P2PDMA not available in this kernel (CONFIG_PCI_P2PDMA is not set)\n");
		return -EOPNOTSUPP;
	}
	if (!(pci_resource_flags(pdev, NRP_GPU_BAR) & IORESOURCE_MEM) ||
	    !bar_size) {
		pci_err(pdev, "BAR%d is not a memory BAR\n", NRP_GPU_BAR);
		return -ENODEV;
	}
	window_size = nrp_gpu_window_mb ? (size_t)nrp_gpu_window_mb << 20 :
		      bar_size;
	if (window_size > bar_size) {
		pci_err(pdev, "window_mb=%u is larger than BAR%d (%pa bytes)\n",
			nrp_gpu_window_mb, NRP_GPU_BAR, &bar_size);
		return -EINVAL;
	}

	gpu = kzalloc(sizeof(*gpu), GFP_KERNEL);
	if (!gpu)
		return -ENOMEM;
	kref_init(&gpu->kref);
	mutex_init(&gpu->lock);
	gpu->pdev = pdev;

	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto out_free_gpu;
	ret = pci_request_region(pdev, NRP_GPU_BAR, KBUILD_MODNAME);
	if (ret)
		goto out_disable_device;

	/*
	 * Managed by devres: the pages and the pool go away after remove()
	 * (or after a failed probe), once every allocation is returned.
	 */
	ret = pci_p2pdma_add_resource(pdev, NRP_GPU_BAR, 0, 0);
	if (ret) {
		pci_err(pdev, "cannot register BAR%d as P2PDMA memory: %d\n",
			NRP_GPU_BAR, ret);
		goto out_release_region;
	}

	/* Taken before publishing, so no other P2PDMA user can get it first. */
	gpu->window = pci_alloc_p2pmem(pdev, window_size);
	if (!gpu->window) {
		pci_err(pdev, "cannot allocate a %zu-byte window from the P2PDMA pool\n",
			window_size);
		ret = -ENOMEM;
		goto out_release_region;
	}
	gpu->window_size = window_size;
	if (!is_pci_p2pdma_page(virt_to_page(gpu->window))) {
		pci_err(pdev, "P2PDMA pool returned memory without P2PDMA pages\n");
		ret = -EIO;
		goto out_free_window;
	}
	gpu->window_bus = pci_p2pmem_virt_to_bus(pdev, gpu->window);
	gpu->window_bar_off = gpu->window_bus -
			      pci_bus_address(pdev, NRP_GPU_BAR);
	pci_p2pmem_publish(pdev, true);

	ret = ida_alloc(&nrp_gpu_ida, GFP_KERNEL);
	if (ret < 0)
		goto out_unpublish;
	gpu->id = ret;
	snprintf(gpu->name, sizeof(gpu->name), "nrp-gpu%d", gpu->id);
	gpu->misc.minor = MISC_DYNAMIC_MINOR;
	gpu->misc.name = gpu->name;
	gpu->misc.fops = &nrp_gpu_fops;
	gpu->misc.parent = &pdev->dev;
	gpu->misc.mode = 0600;

	pci_set_drvdata(pdev, gpu);
	ret = misc_register(&gpu->misc);
	if (ret)
		goto out_free_id;

	pci_info(pdev, "/dev/%s: BAR%d %pR, %zu MiB P2PDMA window at BAR offset %#llx, published\n",
		 gpu->name, NRP_GPU_BAR, &pdev->resource[NRP_GPU_BAR],
		 window_size >> 20, gpu->window_bar_off);
	return 0;

out_free_id:
	ida_free(&nrp_gpu_ida, gpu->id);
out_unpublish:
	pci_p2pmem_publish(pdev, false);
out_free_window:
	pci_free_p2pmem(pdev, gpu->window, window_size);
out_release_region:
	pci_release_region(pdev, NRP_GPU_BAR);
out_disable_device:
	pci_disable_device(pdev);
out_free_gpu:
	kfree(gpu);
	return ret;
}

static void nrp_gpu_remove(struct pci_dev *pdev)
{
	struct nrp_gpu *gpu = pci_get_drvdata(pdev);

	/* No new opens; files already open keep gpu alive through kref. */
	misc_deregister(&gpu->misc);
	pci_p2pmem_publish(pdev, false);

	/*
	 * Waits for a running ioctl (and so for its bios). The window must
	 * be back in the pool before devres unmaps the pages: that unmap
	 * waits for every allocation and would hang on ours otherwise.
	 */
	mutex_lock(&gpu->lock);
	gpu->removed = true;
	pci_free_p2pmem(pdev, gpu->window, gpu->window_size);
	gpu->window = NULL;
	mutex_unlock(&gpu->lock);

	ida_free(&nrp_gpu_ida, gpu->id);
	pci_release_region(pdev, NRP_GPU_BAR);
	pci_disable_device(pdev);
	kref_put(&gpu->kref, nrp_gpu_free);
}

/*
 * No MODULE_DEVICE_TABLE on purpose: ivshmem has other users, and this
 * fixture must bind only when a test loads it.
 */
static const struct pci_device_id nrp_gpu_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, NRP_GPU_IVSHMEM_DEVICE) },
	{ }
};

static struct pci_driver nrp_gpu_driver = {
	.name		= KBUILD_MODNAME,
	.id_table	= nrp_gpu_ids,
	.probe		= nrp_gpu_probe,
	.remove		= nrp_gpu_remove,
};

static int __init nrp_gpu_init(void)
{
	if (!IS_ENABLED(CONFIG_PCI_P2PDMA))
		pr_info("P2PDMA not available in this kernel: devices will not bind\n");
	return pci_register_driver(&nrp_gpu_driver);
}

static void __exit nrp_gpu_exit(void)
{
	pci_unregister_driver(&nrp_gpu_driver);
	ida_destroy(&nrp_gpu_ida);
}

module_init(nrp_gpu_init);
module_exit(nrp_gpu_exit);

MODULE_DESCRIPTION("GPU stand-in: ivshmem BAR as PCI P2PDMA memory with an in-kernel block I/O mover");
MODULE_LICENSE("GPL");
