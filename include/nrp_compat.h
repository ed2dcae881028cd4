/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel differences, in one place. Every decision here rests on a feature
 * probed in the kernel we build against (scripts/compat-probe.sh), never on
 * a version number, so a distribution backport is picked up as it is.
 */
#ifndef NRP_COMPAT_H
#define NRP_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/memremap.h>
#include <linux/pci-p2pdma.h>
#include <rdma/ib_verbs.h>

#include "nrp_probed.h"

#ifdef NRP_HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#ifdef NRP_HAVE_BLK_MQ_RDMA_H
#include <linux/blk-mq-rdma.h>
#endif
#ifdef NRP_HAVE_NVME_AUTH_GENERATE_KEY
#include <linux/nvme-auth.h>
#endif

#ifndef NRP_HAVE_CTRL_OPS_SUPPORTS_P2PDMA
#error "nvme-rdma-p2p needs nvme_ctrl_ops.supports_pci_p2pdma (Linux 5.11 or later)"
#endif

/*
 * Whether this kernel can hand P2PDMA pages to a block driver at all. On a
 * kernel built without CONFIG_PCI_P2PDMA (Debian's stock kernel) the
 * feature is reported as unavailable and never advertised.
 */
#define nrp_kernel_has_p2pdma() IS_ENABLED(CONFIG_PCI_P2PDMA)

#ifdef NRP_HAVE_IS_PCI_P2PDMA_PAGE
#define nrp_is_p2p_page(page)	is_pci_p2pdma_page(page)
#elif IS_ENABLED(CONFIG_PCI_P2PDMA)
/*
 * Not a kernel without P2P pages, but a probe that missed (a later kernel
 * moved the function): built on, the module would map every P2P page as
 * host memory and refuse no P2P failover. scripts/compat-probe.sh stops
 * first; this catches a stale or hand-made nrp_probed.h.
 */
#error "nvme-rdma-p2p: CONFIG_PCI_P2PDMA=y, but no is_pci_p2pdma_page() was probed"
#else
static inline bool nrp_is_p2p_page(struct page *page)
{
	return false;
}
#endif

#ifdef NRP_HAVE_IB_DMA_PCI_P2P_DMA_SUPPORTED
#define nrp_ib_p2p_capable(ibdev) ib_dma_pci_p2p_dma_supported(ibdev)
#else
static inline bool nrp_ib_p2p_capable(struct ib_device *ibdev)
{
	return false;
}
#endif

/*
 * P2P-aware mapping of a scatterlist for an RDMA device: unlike
 * ib_dma_map_sg() it reports why a mapping failed, -EREMOTEIO meaning the
 * peer memory cannot be reached from the device. The RDMA flavour of
 * dma_map_sgtable() arrived together with ib_dma_pci_p2p_dma_supported(),
 * so that probe stands for both.
 */
#if IS_ENABLED(CONFIG_PCI_P2PDMA) && defined(NRP_HAVE_DMA_MAP_SGTABLE) && \
	defined(NRP_HAVE_IB_DMA_PCI_P2P_DMA_SUPPORTED)
static inline int nrp_ib_map_sgtable(struct ib_device *ibdev,
				     struct sg_table *sgt,
				     enum dma_data_direction dir)
{
	return ib_dma_map_sgtable_attrs(ibdev, sgt, dir, 0);
}

static inline void nrp_ib_unmap_sgtable(struct ib_device *ibdev,
					struct sg_table *sgt,
					enum dma_data_direction dir)
{
	ib_dma_unmap_sgtable_attrs(ibdev, sgt, dir, 0);
}
#else
static inline int nrp_ib_map_sgtable(struct ib_device *ibdev,
				     struct sg_table *sgt,
				     enum dma_data_direction dir)
{
	return -EREMOTEIO;
}

static inline void nrp_ib_unmap_sgtable(struct ib_device *ibdev,
					struct sg_table *sgt,
					enum dma_data_direction dir)
{
}
#endif

/*
 * Stopping and starting the queues of a controller: the nvme core renamed
 * stop/start to quiesce/unquiesce. The old names would read as if the
 * queues were torn down, so ours follow the new ones.
 */
#ifdef NRP_HAVE_NVME_QUIESCE_IO_QUEUES
#define nrp_quiesce_admin_queue(c)	nvme_quiesce_admin_queue(c)
#define nrp_unquiesce_admin_queue(c)	nvme_unquiesce_admin_queue(c)
#define nrp_quiesce_io_queues(c)	nvme_quiesce_io_queues(c)
#define nrp_unquiesce_io_queues(c)	nvme_unquiesce_io_queues(c)

/*
 * Open the I/O queues after a teardown left them quiesced (a reset, an
 * error recovery, a failed attempt). The core's unquiesce walks the tag
 * set's whole list of queues, but the scan work may have added a
 * namespace's queue since the quiesce (a reset or error right after a
 * connect, a delete overtaking them): that queue was never quiesced and
 * blk-mq WARNs when it is unquiesced (seen on 6.12: a reset_controller
 * and a delete_controller written while the first scan runs). So only
 * the queues that are quiesced are unquiesced, under the core's own
 * NVME_CTRL_STOPPED marker. The flag does not say who quiesced: a new
 * queue that something else holds quiesced at that moment (an elevator
 * switch, del_gendisk of a namespace the scan drops) loses that quiesce,
 * as it does to the core's walk; narrower, not exact. Linux 6.1 marks
 * each namespace it stopped and needs none of this.
 */
static inline void nrp_open_io_queues(struct nvme_ctrl *ctrl)
{
	struct request_queue *q;

	if (!ctrl->tagset || !test_and_clear_bit(NVME_CTRL_STOPPED, &ctrl->flags))
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(q, &ctrl->tagset->tag_list, tag_set_list)
		if (!blk_queue_skip_tagset_quiesce(q) && blk_queue_quiesced(q))
			blk_mq_unquiesce_queue(q);
	rcu_read_unlock();
}
#else
#define nrp_quiesce_admin_queue(c)	nvme_stop_admin_queue(c)
#define nrp_unquiesce_admin_queue(c)	nvme_start_admin_queue(c)
#define nrp_quiesce_io_queues(c)	nvme_stop_queues(c)
#define nrp_unquiesce_io_queues(c)	nvme_start_queues(c)
#define nrp_open_io_queues(c)		nvme_start_queues(c)
#endif

/* A fabrics controller is never resumed from suspend. */
#ifdef NRP_HAVE_NVME_INIT_CTRL_FINISH_SUSPENDED
#define nrp_init_ctrl_finish(c)		nvme_init_ctrl_finish(c, false)
#else
#define nrp_init_ctrl_finish(c)		nvme_init_ctrl_finish(c)
#endif

/* Orderly shutdown (CC.SHN) on delete, a plain disable on reset. */
#ifdef NRP_HAVE_NVME_DISABLE_CTRL_SHUTDOWN
#define nrp_disable_ctrl(c, shutdown)	nvme_disable_ctrl(c, shutdown)
#else
static inline int nrp_disable_ctrl(struct nvme_ctrl *ctrl, bool shutdown)
{
	return shutdown ? nvme_shutdown_ctrl(ctrl) : nvme_disable_ctrl(ctrl);
}
#endif

/*
 * Whether to try again after a failed connect. Kernels that look at the
 * failure give up on an NVMe status with Do Not Retry set and on a
 * rejected authentication; older ones count attempts only.
 */
#ifdef NRP_HAVE_NVMF_SHOULD_RECONNECT_STATUS
#define nrp_should_reconnect(c, status)	nvmf_should_reconnect(c, status)
#else
static inline bool nrp_should_reconnect(struct nvme_ctrl *ctrl, int status)
{
	return nvmf_should_reconnect(ctrl);
}
#endif

/*
 * Where nvme_init_ctrl() only prepares the controller, nvme_add_ctrl()
 * makes it visible (name, character device); before, init did both.
 */
#ifdef NRP_HAVE_NVME_ADD_CTRL
#define nrp_add_ctrl(c)			nvme_add_ctrl(c)
#else
static inline int nrp_add_ctrl(struct nvme_ctrl *ctrl)
{
	return 0;
}
#endif

/*
 * Where nvme_init_ctrl() also adds the controller's device (no
 * nvme_add_ctrl()), it parses the DH-HMAC-CHAP secrets after that, and on
 * a malformed one returns without putting the device's last reference:
 * the controller leaks (kmemleak, Linux 6.1 with CONFIG_NVME_AUTH). We
 * parse them first with the same library, so that a bad secret fails the
 * connect with -EINVAL before anything is made. Where init only prepares
 * the controller, it parses before it adds anything: nothing to do.
 */
#if !defined(NRP_HAVE_NVME_ADD_CTRL) && \
	defined(NRP_HAVE_NVME_AUTH_GENERATE_KEY) && IS_ENABLED(CONFIG_NVME_AUTH)
static inline int nrp_check_dhchap_secret(char *secret)
{
	struct nvme_dhchap_key *key;
	int ret;

	ret = nvme_auth_generate_key((u8 *)secret, &key);
	if (!ret)
		nvme_auth_free_key(key);
	return ret;
}
#else
static inline int nrp_check_dhchap_secret(char *secret)
{
	return 0;
}
#endif

/*
 * Spread the queues of a map over the CPUs. Where blk-mq still has its RDMA
 * helper it follows the device's completion vector affinity (and falls back
 * to the plain spread when the device has none); later kernels dropped it
 * since no RDMA driver reports an affinity any more.
 */
#ifdef NRP_HAVE_BLK_MQ_RDMA_H
#define nrp_map_queues_rdma(map, ibdev)	blk_mq_rdma_map_queues(map, ibdev, 0)
#else
static inline void nrp_map_queues_rdma(struct blk_mq_queue_map *map,
				       struct ib_device *ibdev)
{
	blk_mq_map_queues(map);
}
#endif

/*
 * The parameters of a class interface's add_dev and remove_dev, which were
 * also passed the interface.
 */
#ifdef NRP_HAVE_CLASS_INTF_ARG
#define NRP_CLASS_INTF_PARAMS	struct device *dev, struct class_interface *intf
#else
#define NRP_CLASS_INTF_PARAMS	struct device *dev
#endif

/*
 * Call @v->fn for each namespace of a controller, under the lock the core
 * takes for its list: its rwsem, or (6.7 on) its SRCU.
 */
struct nrp_ns_visit {
	void	(*fn)(struct nvme_ns *ns, void *data);
	void	*data;
};

#ifdef NRP_HAVE_CTRL_NAMESPACES_RWSEM
static inline void nrp_visit_ns(struct nvme_ctrl *ctrl,
				const struct nrp_ns_visit *v)
{
	struct nvme_ns *ns;

	down_read(&ctrl->namespaces_rwsem);
	list_for_each_entry(ns, &ctrl->namespaces, list)
		v->fn(ns, v->data);
	up_read(&ctrl->namespaces_rwsem);
}
#else
static inline void nrp_visit_ns(struct nvme_ctrl *ctrl,
				const struct nrp_ns_visit *v)
{
	struct nvme_ns *ns;
	int idx;

	idx = srcu_read_lock(&ctrl->srcu);
	list_for_each_entry_srcu(ns, &ctrl->namespaces, list,
				 srcu_read_lock_held(&ctrl->srcu))
		v->fn(ns, v->data);
	srcu_read_unlock(&ctrl->srcu, idx);
}
#endif

/*
 * Whether a queue takes P2PDMA pages: a feature of its limits, changed
 * through a limits update (6.11 on), or a queue flag.
 */
#ifdef NRP_HAVE_BLK_FEAT_PCI_P2PDMA
static inline void nrp_queue_set_p2pdma(struct request_queue *q, bool on)
{
	struct queue_limits lim = queue_limits_start_update(q);

	if (on)
		lim.features |= BLK_FEAT_PCI_P2PDMA;
	else
		lim.features &= ~BLK_FEAT_PCI_P2PDMA;
	/* nothing else changes: a feature bit is never refused */
	WARN_ON_ONCE(queue_limits_commit_update(q, &lim));
}
#else
static inline void nrp_queue_set_p2pdma(struct request_queue *q, bool on)
{
	if (on)
		blk_queue_flag_set(QUEUE_FLAG_PCI_P2PDMA, q);
	else
		blk_queue_flag_clear(QUEUE_FLAG_PCI_P2PDMA, q);
}
#endif

/*
 * The virt boundary of our queues. Until 7.1 the core applied
 * NVME_CTRL_PAGE_SIZE - 1 to every controller; since, it asks the
 * transport, and calls the op without checking that it is set. Ours
 * keeps the old boundary on purpose: a request is registered as one
 * fast-registration MR, whose page list needs every segment but the
 * first to start on a page and every one but the last to end on one.
 */
#ifdef NRP_HAVE_CTRL_OPS_GET_VIRT_BOUNDARY
static inline unsigned long nrp_get_virt_boundary(struct nvme_ctrl *ctrl,
						  bool is_admin)
{
	return NVME_CTRL_PAGE_SIZE - 1;
}

static inline void nrp_ops_set_virt_boundary(struct nvme_ctrl_ops *ops)
{
	ops->get_virt_boundary = nrp_get_virt_boundary;
}
#else
static inline void nrp_ops_set_virt_boundary(struct nvme_ctrl_ops *ops)
{
}
#endif

/*
 * Wait for a frozen controller's queues to drain: for the timeout given,
 * or (7.x) for the controller's own I/O timeout, which is the same
 * NVME_IO_TIMEOUT unless the admin set io_timeout.
 */
#ifdef NRP_HAVE_NVME_WAIT_FREEZE_TIMEOUT_ARG
#define nrp_wait_freeze_timeout(c)	nvme_wait_freeze_timeout(c, NVME_IO_TIMEOUT)
#else
#define nrp_wait_freeze_timeout(c)	nvme_wait_freeze_timeout(c)
#endif

/* Map a request's data to a scatterlist (the queue argument went in 7.x). */
static inline int nrp_rq_map_sg(struct request *rq, struct scatterlist *sgl)
{
#ifdef NRP_HAVE_BLK_RQ_MAP_SG_QUEUE_ARG
	return blk_rq_map_sg(rq->q, rq, sgl);
#else
	return blk_rq_map_sg(rq, sgl);
#endif
}

/*
 * A zeroed allocation of one object of @p's type. 7.x has its typed
 * allocators, whose checkpatch asks for them; before, the sizeof form.
 */
#ifndef NRP_HAVE_KZALLOC_OBJ
#define kzalloc_obj(p, gfp)		kzalloc(sizeof(p), gfp)
#endif

/*
 * Hardware context @idx of @q, NULL past the last one: queue_hctx() (7.x)
 * indexes its array without a bounds check, where the xarray before it
 * returned NULL.
 */
static inline struct blk_mq_hw_ctx *nrp_queue_hctx(struct request_queue *q,
						   unsigned int idx)
{
	if (idx >= q->nr_hw_queues)
		return NULL;
#ifdef NRP_HAVE_QUEUE_HCTX
	return queue_hctx(q, idx);
#else
	return xa_load(&q->hctx_table, idx);
#endif
}

/* The NUMA node argument of blk_mq_ops.init_request (an int from 7.x). */
#ifdef NRP_HAVE_INIT_REQUEST_NUMA_INT
#define nrp_numa_node_t			int
#else
#define nrp_numa_node_t			unsigned int
#endif

#endif /* NRP_COMPAT_H */
