// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: RDMA queue plumbing.
 *
 * An nrp_queue comes up in three steps driven by rdma_cm events: the
 * address resolves (then the verbs resources are built, because only now
 * is the ib_device known), the route resolves (then the CM connect carries
 * the NVMe/RDMA private data), the connection is established (then the
 * receive ring is posted). nrp_start_queue() then runs the fabrics Connect
 * command over it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "nrp.h"

/* needs the types nrp.h brings in */
#include <linux/nvme-rdma.h>

static LIST_HEAD(nrp_devices);
/*
 * ib_devices our ib_client is removing (struct nrp_dying, on the stack of
 * nrp_ib_remove_one()): no queue may take resources on them any more.
 */
static LIST_HEAD(nrp_dying_devices);
static DEFINE_MUTEX(nrp_devices_lock);
/* woken when an nrp_device is gone, with all it held on its ib_device */
static DECLARE_WAIT_QUEUE_HEAD(nrp_devices_released);

static void nrp_device_release(struct kref *ref)
{
	struct nrp_device *dev = container_of(ref, struct nrp_device, ref);

	/* before unlisting: a removal waits for the list to be empty */
	ib_dealloc_pd(dev->pd);

	mutex_lock(&nrp_devices_lock);
	list_del(&dev->node);
	mutex_unlock(&nrp_devices_lock);
	wake_up_all(&nrp_devices_released);

	kfree(dev);
}

static bool nrp_ibdev_dying_locked(struct ib_device *ibdev)
{
	struct nrp_dying *d;

	lockdep_assert_held(&nrp_devices_lock);
	list_for_each_entry(d, &nrp_dying_devices, node)
		if (d->ibdev == ibdev)
			return true;
	return false;
}

/* Whether @dev's ib_device is being removed. */
bool nrp_device_dying(struct nrp_device *dev)
{
	bool dying;

	mutex_lock(&nrp_devices_lock);
	dying = nrp_ibdev_dying_locked(dev->ibdev);
	mutex_unlock(&nrp_devices_lock);
	return dying;
}

/*
 * From here on no queue builds anything on @d->ibdev. Returns whether
 * we hold anything on it, that is, whether there is anything to wait for.
 */
bool nrp_device_mark_dying(struct nrp_dying *d)
{
	struct nrp_device *dev;
	bool used = false;

	mutex_lock(&nrp_devices_lock);
	list_add(&d->node, &nrp_dying_devices);
	list_for_each_entry(dev, &nrp_devices, node)
		used |= dev->ibdev == d->ibdev;
	mutex_unlock(&nrp_devices_lock);
	return used;
}

static bool nrp_ibdev_unused(struct ib_device *ibdev)
{
	struct nrp_device *dev;
	bool used = false;

	mutex_lock(&nrp_devices_lock);
	list_for_each_entry(dev, &nrp_devices, node)
		used |= dev->ibdev == ibdev;
	mutex_unlock(&nrp_devices_lock);
	return !used;
}

/*
 * Wait until no queue holds a PD, QP, CQ or MR on @d->ibdev any more;
 * the RDMA core frees pooled CQs right after its clients are removed.
 */
void nrp_device_wait_unused(struct nrp_dying *d)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);

	/*
	 * Not wait_event(): the condition takes nrp_devices_lock, and a
	 * mutex must not be taken once the task is set to sleep (the debug
	 * kernel warns "do not call blocking ops when !TASK_RUNNING"). With
	 * wait_woken() the check runs while we are still running, and a
	 * release between the check and the sleep is not lost: its wake-up
	 * marks the entry, and wait_woken() then returns at once.
	 */
	add_wait_queue(&nrp_devices_released, &wait);
	while (!nrp_ibdev_unused(d->ibdev)) {
		if (!wait_woken(&wait, TASK_UNINTERRUPTIBLE, 10 * HZ))
			dev_warn(&d->ibdev->dev,
				 "waiting for NVMe/RDMA queues to leave the device\n");
	}
	remove_wait_queue(&nrp_devices_released, &wait);

	mutex_lock(&nrp_devices_lock);
	list_del(&d->node);
	mutex_unlock(&nrp_devices_lock);
}

static void nrp_device_put(struct nrp_device *dev)
{
	kref_put(&dev->ref, nrp_device_release);
}

/*
 * All queues of all controllers on one ib_device share one PD, so that
 * the device is set up once and its global rkey (if any) exists once.
 */
static struct nrp_device *nrp_device_get(struct ib_device *ibdev)
{
	struct nrp_device *dev;
	int ret;

	mutex_lock(&nrp_devices_lock);
	if (nrp_ibdev_dying_locked(ibdev)) {
		dev_info(&ibdev->dev,
			 "being removed, no new NVMe/RDMA queues on it\n");
		dev = ERR_PTR(-ENODEV);
		goto out_unlock;
	}
	list_for_each_entry(dev, &nrp_devices, node) {
		/* a zero count means it is on its way out: make a new one */
		if (dev->ibdev == ibdev && kref_get_unless_zero(&dev->ref))
			goto out_unlock;
	}

	if (!(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)) {
		dev_err(&ibdev->dev,
			"no fast memory registration (FRWR) support, cannot carry NVMe/RDMA\n");
		dev = ERR_PTR(-EOPNOTSUPP);
		goto out_unlock;
	}

	dev = kzalloc_obj(*dev, GFP_KERNEL);
	if (!dev) {
		dev = ERR_PTR(-ENOMEM);
		goto out_unlock;
	}

	/*
	 * Without register_always, single-segment I/O is described by the
	 * PD's global rkey, which exposes all of memory to the target.
	 */
	dev->pd = ib_alloc_pd(ibdev, nrp_register_always ?
			      0 : IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(dev->pd)) {
		ret = PTR_ERR(dev->pd);
		dev_err(&ibdev->dev, "failed to allocate a PD: %d\n", ret);
		kfree(dev);
		dev = ERR_PTR(ret);
		goto out_unlock;
	}

	dev->ibdev = ibdev;
	kref_init(&dev->ref);
	/* one SGE of every SEND is taken by the command capsule itself */
	if (ibdev->attrs.max_send_sge > 1)
		dev->inline_sges = min_t(u32, NRP_MAX_INLINE_SGES,
					 ibdev->attrs.max_send_sge - 1);
	list_add(&dev->node, &nrp_devices);

out_unlock:
	mutex_unlock(&nrp_devices_lock);
	return dev;
}

/*
 * Largest page count one FRWR may map on @ibdev with MRs of at most @cap
 * entries, in units of the 4 KiB NVMe controller page. One entry of the
 * MR is held back: a buffer that does not start on a page boundary needs
 * one page more than its length suggests.
 */
u32 nrp_max_fr_pages(struct ib_device *ibdev, u32 cap)
{
	u32 len = min(ibdev->attrs.max_fast_reg_page_list_len, cap);

	if (len < 2)
		return 1;
	return len - 1;
}

/*
 * Page-list length of the MRs of @queue's pool. The admin queue is built
 * before Identify and takes what device and max_mr_pages allow. The I/O
 * queues are built after it, when the core has lowered max_hw_sectors to
 * the target's MDTS; they take that, but never less than an earlier
 * association of the controller did: requests built then may be requeued
 * to this one (a target whose MDTS shrank across a reconnect).
 */
static u32 nrp_queue_mr_pages(struct nrp_queue *queue, struct ib_device *ibdev)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	u32 dev_pages = nrp_max_fr_pages(ibdev, ctrl->mr_pages_cap);
	u32 pages;

	if (!nrp_qid(queue))
		return dev_pages + 1;

	pages = min(dev_pages, ctrl->ctrl.max_hw_sectors >>
			       NRP_SECTORS_PER_PAGE_SHIFT);
	/* a later device with shorter page lists cannot keep the promise */
	pages = min(max(pages + 1, ctrl->io_mr_pages), dev_pages + 1);
	ctrl->io_mr_pages = pages;
	return pages;
}

/*
 * Whether a namespace reached through @ibdev may be handed PCI P2PDMA
 * pages. Soft RDMA devices (rxe, siw) move data with the CPU through
 * kernel virtual addresses; that works with P2P BAR memory but is slow
 * and bypasses the PCI topology checks, so it needs allow_soft_p2p.
 */
bool nrp_ibdev_p2p_ok(struct ib_device *ibdev)
{
	if (!nrp_kernel_has_p2pdma())
		return false;
	if (ib_uses_virt_dma(ibdev))
		return READ_ONCE(nrp_allow_soft_p2p);
	return nrp_ib_p2p_capable(ibdev);
}

int nrp_alloc_qe(struct ib_device *ibdev, struct nrp_qe *qe, size_t len,
		 enum dma_data_direction dir)
{
	qe->buf = kzalloc(len, GFP_KERNEL);
	if (!qe->buf)
		return -ENOMEM;

	qe->dma = ib_dma_map_single(ibdev, qe->buf, len, dir);
	if (ib_dma_mapping_error(ibdev, qe->dma)) {
		kfree(qe->buf);
		qe->buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

void nrp_free_qe(struct ib_device *ibdev, struct nrp_qe *qe, size_t len,
		 enum dma_data_direction dir)
{
	if (!qe->buf)
		return;
	ib_dma_unmap_single(ibdev, qe->dma, len, dir);
	kfree(qe->buf);
	qe->buf = NULL;
}

static void nrp_free_ring(struct ib_device *ibdev, struct nrp_qe *ring,
			  int count)
{
	int i;

	for (i = 0; i < count; i++)
		nrp_free_qe(ibdev, &ring[i], sizeof(struct nvme_completion),
			    DMA_FROM_DEVICE);
	kfree(ring);
}

/*
 * Response buffers stay mapped for the life of the queue: a change of
 * the underlying device always goes through error recovery, which
 * rebuilds the queue.
 */
static struct nrp_qe *nrp_alloc_ring(struct ib_device *ibdev, int count)
{
	struct nrp_qe *ring;
	int i;

	ring = kcalloc(count, sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return NULL;

	for (i = 0; i < count; i++) {
		if (nrp_alloc_qe(ibdev, &ring[i],
				 sizeof(struct nvme_completion),
				 DMA_FROM_DEVICE)) {
			nrp_free_ring(ibdev, ring, i);
			return NULL;
		}
	}
	return ring;
}

static void nrp_qp_event(struct ib_event *event, void *context)
{
	struct nrp_queue *queue = context;

	dev_dbg(queue->ctrl->ctrl.device, "queue %d: QP event %s (%d)\n",
		nrp_qid(queue), ib_event_msg(event->event), event->event);
}

static int nrp_get_cq(struct nrp_queue *queue)
{
	struct ib_device *ibdev = queue->dev->ibdev;
	int qid = nrp_qid(queue);
	struct ib_cq *cq, *send_cq;
	int vector;

	/* the admin queue is quiet: let it share a vector with I/O queue 1 */
	vector = (qid ? qid - 1 : 0) % ibdev->num_comp_vectors;

	if (queue->polled) {
		/* blk-mq polls one CQ for everything */
		cq = ib_alloc_cq(ibdev, queue, queue->cq_depth, vector,
				 IB_POLL_DIRECT);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		queue->cq = cq;
		queue->send_cq = cq;
		return 0;
	}

	/*
	 * See nrp_reap_sends(): sends on a CQ armed only on demand, which
	 * none of ib_core's polling contexts does. It is a direct-polled CQ
	 * from ib_alloc_cq(), whose event (never raised unless we arm it)
	 * schedules our own irq_poll, as a softirq CQ of ib_core would its
	 * own. ib_core expects no event of a direct CQ: it never arms one,
	 * and its handler, ib_cq_completion_direct(), only warns. We arm it,
	 * so the handler is replaced here, before a QP uses the CQ or
	 * anyone arms it: ib_core sets comp_handler only in __ib_alloc_cq()
	 * and never reads it itself, and rxe (rxe_cq_post(), through its
	 * completion tasklet), siw (siw_sqe_complete(), siw_cq_notify_now())
	 * and mlx5 (mlx5_ib_cq_comp()) call it through the ib_cq at each
	 * event of an armed CQ, and only then (6.1 and 6.12 alike;
	 * send_cq_events counts them, test_mapping_modes.sh asserts them
	 * over rxe and siw). Why direct and not a CQ of ib_create_cq() with
	 * a handler of ours from the start: ib_drain_qp() polls a direct CQ
	 * itself, ib_process_cq_direct(), and so does mlx5's drain in an
	 * internal error (handle_drain_completion()), which for any other
	 * CQ disables and runs the irq_poll or work of ib_core's polling
	 * context, which such a CQ never had.
	 */
	send_cq = ib_alloc_cq(ibdev, queue, queue->send_cq_depth, vector,
			      IB_POLL_DIRECT);
	if (IS_ERR(send_cq))
		return PTR_ERR(send_cq);
	send_cq->comp_handler = nrp_send_cq_event;
	cq = ib_cq_pool_get(ibdev, queue->cq_depth, vector, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq))
		goto out_free_send_cq;

	atomic_set(&queue->send_waiters, 0);
	irq_poll_init(&queue->send_iop, NRP_SEND_POLL_BUDGET, nrp_send_poll);
	clear_bit(NRP_Q_REAPER_STOPPED, &queue->flags);
	queue->cq = cq;
	queue->send_cq = send_cq;
	return 0;

out_free_send_cq:
	ib_free_cq(send_cq);
	return PTR_ERR(cq);
}

/*
 * After the QP is drained and destroyed: no completion of it is left to
 * reap, and none can be reaped into a freed QP.
 */
static void nrp_put_cq(struct nrp_queue *queue)
{
	if (queue->polled) {
		ib_free_cq(queue->cq);
	} else {
		ib_cq_pool_put(queue->cq, queue->cq_depth);
		ib_free_cq(queue->send_cq);
	}
	queue->cq = NULL;
	queue->send_cq = NULL;
}

/*
 * Stop send_iop once the QP is drained (every completion it will ever have
 * is reaped), before anyone cancels a request and before the QP goes: no
 * round of it may still be running then, or start later from an event of
 * the CQ armed for the drain (irq_poll_sched() on a disabled one does
 * nothing, and the queue, where send_iop lives, outlives the CQ). Called
 * by the drain, and by the teardown of a queue that never connected.
 */
static void nrp_stop_send_reaper(struct nrp_queue *queue)
{
	/* once an association: irq_poll_disable() twice never returns */
	if (queue->polled ||
	    test_and_set_bit(NRP_Q_REAPER_STOPPED, &queue->flags))
		return;
	irq_poll_disable(&queue->send_iop);
	/*
	 * irq_poll_disable() returns once no round is scheduled; a round
	 * that called irq_poll_complete() may still be arming the send CQ,
	 * and so may another that was scheduled meanwhile on another CPU
	 * (a stock 6.1 guest oopsed there when its teardown had freed the
	 * CQ). No round starts after the disable: wait until all returned.
	 * Pairs with atomic_dec_return_release() in nrp_send_poll().
	 */
	while (atomic_read_acquire(&queue->send_polls))
		usleep_range(100, 200);
}

static int nrp_create_qp(struct nrp_queue *queue)
{
	struct ib_qp_init_attr attr = {
		.event_handler	= nrp_qp_event,
		.qp_context	= queue,
		.send_cq	= queue->send_cq,
		.recv_cq	= queue->cq,
		.sq_sig_type	= IB_SIGNAL_REQ_WR,
		.qp_type	= IB_QPT_RC,
	};
	int ret;

	/* the extra slot on either side is for ib_drain_qp() */
	attr.cap.max_send_wr = NRP_SQ_SLOTS_PER_CMD * queue->depth + 1;
	attr.cap.max_recv_wr = queue->depth + 1;
	attr.cap.max_send_sge = 1 + queue->dev->inline_sges;
	attr.cap.max_recv_sge = 1;

	ret = rdma_create_qp(queue->cm_id, queue->dev->pd, &attr);
	if (ret)
		return ret;
	queue->qp = queue->cm_id->qp;
	return 0;
}

/*
 * Deregister the tags' MRs, which kills their rkeys. A slot is NULL when
 * its MR went already (nrp_dereg_inflight_mrs()).
 */
static void nrp_unbind_tag_mrs(struct nrp_queue *queue)
{
	u32 i;

	for (i = 0; i < queue->nr_tag_mrs; i++) {
		if (queue->tag_mrs[i])
			ib_dereg_mr(queue->tag_mrs[i]);
	}
	kfree(queue->tag_mrs);
	queue->tag_mrs = NULL;
	queue->nr_tag_mrs = 0;
}

/*
 * Give each of @nr tags an MR of its own. Not ib_core's MR pool: these
 * never return to anyone else, and one whose rkey may still be live must
 * be deregistered on its own once the QP is drained, before its request
 * completes (nrp_dereg_inflight_mrs()), which a pool does not allow.
 */
static int nrp_bind_tag_mrs(struct nrp_queue *queue, u32 nr)
{
	struct ib_mr *mr;
	u32 i;

	queue->tag_mrs = kcalloc(nr, sizeof(*queue->tag_mrs), GFP_KERNEL);
	if (!queue->tag_mrs)
		return -ENOMEM;
	queue->nr_tag_mrs = nr;
	for (i = 0; i < nr; i++) {
		mr = ib_alloc_mr(queue->dev->pd, IB_MR_TYPE_MEM_REG,
				 queue->mr_pages);
		if (IS_ERR(mr)) {
			dev_err(queue->ctrl->ctrl.device,
				"queue %d: no MR of %u pages for tag %u of %u: %ld\n",
				nrp_qid(queue), queue->mr_pages, i, nr,
				PTR_ERR(mr));
			nrp_unbind_tag_mrs(queue);
			return PTR_ERR(mr);
		}
		queue->tag_mrs[i] = mr;
	}
	return 0;
}

/*
 * Tags a command on this queue may have: its depth, or more if the tag
 * set was sized for a deeper queue by an earlier association (the target
 * may grant a smaller sqsize on reconnect; the tag set keeps its size).
 */
static u32 nrp_queue_tags_max(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	u32 set_depth = nrp_qid(queue) ? ctrl->io_set.queue_depth :
					 ctrl->admin_set.queue_depth;

	return max_t(u32, queue->depth, set_depth);
}

/* Called from the ADDR_RESOLVED event, when the ib_device is known. */
static int nrp_create_queue_ib(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	struct ib_device *ibdev;
	int ret;

	queue->dev = nrp_device_get(queue->cm_id->device);
	if (IS_ERR(queue->dev)) {
		ret = PTR_ERR(queue->dev);
		queue->dev = NULL;
		return ret;
	}
	ibdev = queue->dev->ibdev;

	/*
	 * Every send slot and every receive may complete, plus the drain's
	 * marker on either side: on one CQ when polled, else on two.
	 */
	queue->send_cq_depth = NRP_SQ_SLOTS_PER_CMD * queue->depth + 1;
	queue->cq_depth = queue->depth + 1;
	if (queue->polled)
		queue->cq_depth += queue->send_cq_depth;
	ret = nrp_get_cq(queue);
	if (ret) {
		dev_err(ctrl->ctrl.device,
			"queue %d: no CQs of %d and %d entries: %d\n",
			nrp_qid(queue), queue->cq_depth, queue->send_cq_depth,
			ret);
		goto out_put_device;
	}

	ret = nrp_create_qp(queue);
	if (ret) {
		dev_err(ctrl->ctrl.device, "queue %d: QP creation failed: %d\n",
			nrp_qid(queue), ret);
		goto out_put_cq;
	}

	queue->rsp_ring = nrp_alloc_ring(ibdev, queue->depth);
	if (!queue->rsp_ring) {
		ret = -ENOMEM;
		goto out_destroy_qp;
	}

	queue->mr_pages = nrp_queue_mr_pages(queue, ibdev);
	queue->tags_max = nrp_queue_tags_max(queue);
	atomic_set(&queue->inflight, 0);
	ret = nrp_bind_tag_mrs(queue, queue->tags_max);
	if (ret)
		goto out_free_ring;

	set_bit(NRP_Q_IB_READY, &queue->flags);
	return 0;

out_free_ring:
	nrp_free_ring(ibdev, queue->rsp_ring, queue->depth);
	queue->rsp_ring = NULL;
out_destroy_qp:
	/* nothing was posted: no completion to wait for */
	nrp_stop_send_reaper(queue);
	rdma_destroy_qp(queue->cm_id);
	queue->qp = NULL;
out_put_cq:
	nrp_put_cq(queue);
out_put_device:
	nrp_device_put(queue->dev);
	queue->dev = NULL;
	return ret;
}

/*
 * Runs with the cm_id already destroyed (so no event handler can be
 * building these resources concurrently), which is also why the QP goes
 * through ib_destroy_qp() rather than rdma_destroy_qp().
 */
static void nrp_destroy_queue_ib(struct nrp_queue *queue)
{
	struct ib_device *ibdev;

	if (!test_and_clear_bit(NRP_Q_IB_READY, &queue->flags))
		return;

	ibdev = queue->dev->ibdev;
	/* the QP is drained: nothing can use the MRs any more */
	nrp_unbind_tag_mrs(queue);
	nrp_stop_send_reaper(queue);
	ib_destroy_qp(queue->qp);
	queue->qp = NULL;
	nrp_put_cq(queue);
	nrp_free_ring(ibdev, queue->rsp_ring, queue->depth);
	queue->rsp_ring = NULL;
	nrp_device_put(queue->dev);
	queue->dev = NULL;
}

static int nrp_on_addr_resolved(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	int ret;

	ret = nrp_create_queue_ib(queue);
	if (ret)
		return ret;

	if (ctrl->ctrl.opts->tos >= 0)
		rdma_set_service_type(queue->cm_id, ctrl->ctrl.opts->tos);

	/* the waiter tears the verbs resources down if this fails */
	ret = rdma_resolve_route(queue->cm_id, NRP_CM_RESOLVE_TIMEOUT_MS);
	if (ret)
		dev_err(ctrl->ctrl.device,
			"rdma_resolve_route failed (%d). queue %d\n",
			ret, nrp_qid(queue));
	return ret;
}

static int nrp_on_route_resolved(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	struct nvme_rdma_cm_req priv = {
		.recfmt	= cpu_to_le16(NVME_RDMA_CM_FMT_1_0),
		.qid	= cpu_to_le16(nrp_qid(queue)),
	};
	struct rdma_conn_param param = {
		.qp_num			= queue->qp->qp_num,
		.flow_control		= 1,
		/* a u32 in the device's attributes from 7.x, a u8 here */
		.responder_resources	= min_t(u32, queue->dev->ibdev->attrs.max_qp_rd_atom,
						U8_MAX),
		.retry_count		= 7,	/* the most the CM allows */
		.rnr_retry_count	= 7,	/* 7 means retry forever */
		.private_data		= &priv,
		.private_data_len	= sizeof(priv),
	};
	int ret;

	if (nrp_qid(queue) == 0) {
		/* the admin queue is always the fabrics minimum deep */
		priv.hrqsize = cpu_to_le16(NVME_AQ_DEPTH);
		priv.hsqsize = cpu_to_le16(NVME_AQ_DEPTH - 1);
	} else {
		/*
		 * hsqsize is 0's based; hrqsize is read as 1's based by
		 * targets, so it is the full queue depth.
		 */
		priv.hrqsize = cpu_to_le16(queue->depth);
		priv.hsqsize = cpu_to_le16(ctrl->ctrl.sqsize);
	}

	if (nrp_fault(ctrl, NRP_FAULT_CM_SILENT)) {
		dev_info(ctrl->ctrl.device,
			 "fault: no connect request for queue %d, waiting for the connect bound\n",
			 nrp_qid(queue));
		return 0;
	}

	/* we are inside the cm_id's event handler, hence the _locked call */
	ret = rdma_connect_locked(queue->cm_id, &param);
	if (ret)
		dev_err(ctrl->ctrl.device,
			"rdma_connect_locked failed (%d). queue %d\n",
			ret, nrp_qid(queue));
	return ret;
}

static int nrp_on_established(struct nrp_queue *queue)
{
	int i, ret;

	set_bit(NRP_Q_CONNECTED, &queue->flags);
	for (i = 0; i < queue->depth; i++) {
		ret = nrp_post_recv(queue, &queue->rsp_ring[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int nrp_on_rejected(struct nrp_queue *queue, struct rdma_cm_event *ev)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	const struct nvme_rdma_cm_rej *rej;
	const char *why;
	u8 len = 0;

	why = rdma_reject_msg(queue->cm_id, ev->status);
	rej = rdma_consumer_reject_data(queue->cm_id, ev, &len);
	/*
	 * IB always delivers a full, zero-padded private data area: a zero
	 * status means the peer's rdma_cm, not an NVMe target, refused.
	 */
	if (rej && len >= sizeof(rej->sts) && rej->sts) {
		u16 sts = le16_to_cpu(rej->sts);

		dev_err(ctrl->ctrl.device,
			"Connect rejected: status %d (%s) nvme status %d (%s). queue %d, %pISpcs\n",
			ev->status, why, sts, nvme_rdma_cm_msg(sts),
			nrp_qid(queue), &ctrl->dst_addr);
	} else {
		dev_err(ctrl->ctrl.device,
			"Connect rejected: status %d (%s). queue %d, %pISpcs\n",
			ev->status, why, nrp_qid(queue), &ctrl->dst_addr);
	}
	return -ECONNRESET;
}

/*
 * Must return 0: a non-zero return makes the rdma_cm destroy the id
 * behind our back. Errors reach the waiter through cm_error instead.
 */
static int nrp_cm_handler(struct rdma_cm_id *cm_id, struct rdma_cm_event *ev)
{
	struct nrp_queue *queue = cm_id->context;
	struct nrp_ctrl *ctrl = queue->ctrl;
	int err = 0;

	dev_dbg(ctrl->ctrl.device, "queue %d: CM event %s (%d), status %d\n",
		nrp_qid(queue), rdma_event_msg(ev->event), ev->event,
		ev->status);

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = nrp_on_addr_resolved(queue);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = nrp_on_route_resolved(queue);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		queue->cm_error = nrp_on_established(queue);
		complete(&queue->cm_done);
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		err = nrp_on_rejected(queue, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		/* info, not error: a reconnect loop meets this once a try */
		dev_info(ctrl->ctrl.device,
			 "queue %d: cannot reach %pISpcs: %s (status %d)\n",
			 nrp_qid(queue), &ctrl->dst_addr,
			 rdma_event_msg(ev->event), ev->status);
		err = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * The association is gone. Device removal is normally dealt
		 * with earlier by our ib_client, which deletes controllers
		 * before the rdma_cm hears of it; recovering here as well
		 * costs nothing. A queue still being set up has a waiter
		 * that must not be left hanging. A controller connecting
		 * has no recovery coming (a reset or recovery cancels what
		 * is in flight itself), so what it has in flight on this
		 * queue (a Connect, an authentication exchange the target
		 * ended) expires now rather than after its timeout.
		 */
		dev_dbg(ctrl->ctrl.device, "queue %d: connection lost (%s)\n",
			nrp_qid(queue), rdma_event_msg(ev->event));
		if (!test_bit(NRP_Q_ALLOCATED, &queue->flags)) {
			err = -ECONNRESET;
		} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED &&
			   nvme_ctrl_state(&ctrl->ctrl) == NVME_CTRL_CONNECTING) {
			mutex_lock(&queue->stop_lock);
			if (test_bit(NRP_Q_CONNECTED, &queue->flags))
				nrp_expire_inflight(queue);
			mutex_unlock(&queue->stop_lock);
		}
		nrp_error_recovery(ctrl);
		break;
	default:
		dev_err(ctrl->ctrl.device,
			"Unexpected RDMA CM event (%d): %s, queue %d\n",
			ev->event, rdma_event_msg(ev->event), nrp_qid(queue));
		nrp_error_recovery(ctrl);
		break;
	}

	if (err) {
		queue->cm_error = err;
		complete(&queue->cm_done);
	}
	return 0;
}

static int nrp_wait_for_cm(struct nrp_queue *queue)
{
	unsigned long timeout = msecs_to_jiffies(NRP_CM_CONNECT_TIMEOUT_MS);
	long left;

	left = wait_for_completion_interruptible_timeout(&queue->cm_done,
							 timeout);
	if (left < 0)
		return left;
	if (!left)
		return -ETIMEDOUT;
	return queue->cm_error;
}

/*
 * Disconnect and flush every outstanding WR of @queue, once. Then no
 * completion of the QP is left, and no rkey of a request still in flight
 * is: the requests are completed afterwards by whoever cancels them.
 */
static void nrp_drain_queue(struct nrp_queue *queue, bool disconnect)
{
	if (!test_and_clear_bit(NRP_Q_CONNECTED, &queue->flags))
		return;
	if (disconnect)
		rdma_disconnect(queue->cm_id);
	/*
	 * ib_drain_qp() waits for its marker's completion on the send CQ,
	 * and polls a direct CQ itself only every 100 ms: send_iop keeps
	 * it armed and reaped until the drain is over, so that a queue
	 * drains as soon as its marker completes.
	 */
	if (!queue->polled) {
		set_bit(NRP_Q_DRAINING, &queue->flags);
		nrp_arm_send_reaper(queue);
	}
	ib_drain_qp(queue->qp);
	clear_bit(NRP_Q_DRAINING, &queue->flags);
	/*
	 * ib_drain_qp() may have reaped its marker itself, with a round of
	 * send_iop still completing requests of an earlier batch on another
	 * CPU: wait for that round before anyone cancels what is in flight,
	 * or a request would be completed twice.
	 */
	nrp_stop_send_reaper(queue);
	/* requests chained there were started: the tag set cancels them */
	nrp_discard_unposted(queue);
	/* before any of them completes and its pages are unmapped */
	nrp_dereg_inflight_mrs(queue);
}

int nrp_alloc_queue(struct nrp_ctrl *ctrl, int qid, int depth)
{
	struct nrp_queue *queue = &ctrl->queues[qid];
	struct sockaddr *src = NULL;
	int ret;

	queue->ctrl = ctrl;
	queue->depth = depth;
	queue->polled = qid > ctrl->io_queues[HCTX_TYPE_DEFAULT] +
			      ctrl->io_queues[HCTX_TYPE_READ];
	/*
	 * I/O queues may carry in-capsule data up to the controller's
	 * IOCCSZ; the admin queue never does.
	 */
	if (qid)
		queue->capsule_len = ctrl->ctrl.ioccsz * 16;
	else
		queue->capsule_len = sizeof(struct nvme_command);
	queue->cm_error = -ETIMEDOUT;
	/* an async event request of the last association died with it */
	clear_bit(NRP_Q_AER_POSTED, &queue->flags);
	init_completion(&queue->cm_done);
	/*
	 * stop_lock and sq_lock were set up with the controller
	 * (nrp_init_queue()), never again: blk-mq may be in queue_rq() on
	 * this queue, holding sq_lock, while it reconnects (the I/O queues
	 * stay open then, see nrp_queue_rq()).
	 */

	queue->cm_id = rdma_create_id(&init_net, nrp_cm_handler, queue,
				      RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(queue->cm_id)) {
		ret = PTR_ERR(queue->cm_id);
		dev_err(ctrl->ctrl.device,
			"failed to create CM ID: %d: queue %d\n", ret, qid);
		return ret;
	}

	if (ctrl->ctrl.opts->mask & NVMF_OPT_HOST_TRADDR)
		src = (struct sockaddr *)&ctrl->src_addr;

	ret = rdma_resolve_addr(queue->cm_id, src,
				(struct sockaddr *)&ctrl->dst_addr,
				NRP_CM_RESOLVE_TIMEOUT_MS);
	if (ret) {
		dev_err(ctrl->ctrl.device,
			"rdma_resolve_addr failed (%d). queue %d, %pISpcs\n",
			ret, qid, &ctrl->dst_addr);
		goto out_destroy_cm_id;
	}

	ret = nrp_wait_for_cm(queue);
	if (ret) {
		dev_info(ctrl->ctrl.device,
			 "rdma connection establishment failed (%d): queue %d, %pISpcs\n",
			 ret, qid, &ctrl->dst_addr);
		goto out_destroy_cm_id;
	}

	set_bit(NRP_Q_ALLOCATED, &queue->flags);
	return 0;

out_destroy_cm_id:
	/* once destroyed, no handler runs: the flags below are final */
	rdma_destroy_id(queue->cm_id);
	queue->cm_id = NULL;
	if (test_bit(NRP_Q_IB_READY, &queue->flags))
		nrp_drain_queue(queue, false);
	nrp_destroy_queue_ib(queue);
	return ret;
}

int nrp_start_queue(struct nrp_ctrl *ctrl, int qid)
{
	struct nrp_queue *queue = &ctrl->queues[qid];
	int ret;

	if (qid)
		ret = nvmf_connect_io_queue(&ctrl->ctrl, qid);
	else
		ret = nvmf_connect_admin_queue(&ctrl->ctrl);
	/*
	 * A timeout handler may have drained the queue while the Connect
	 * response was still on its way; the queue is useless then even
	 * though Connect "succeeded".
	 */
	if (!ret && !test_bit(NRP_Q_CONNECTED, &queue->flags))
		ret = -ENOTCONN;
	if (ret) {
		dev_info(ctrl->ctrl.device,
			 "failed to connect queue: %d ret=%d\n", qid, ret);
		/* nothing will use this connection: stop its completions */
		nrp_stop_queue(queue);
		return ret;
	}

	set_bit(NRP_Q_LIVE, &queue->flags);
	return 0;
}

/*
 * Close @queue to new commands and flush it. May run concurrently from
 * the timeout handler and from teardown; the first caller drains.
 */
void nrp_stop_queue(struct nrp_queue *queue)
{
	if (!test_bit(NRP_Q_ALLOCATED, &queue->flags))
		return;

	mutex_lock(&queue->stop_lock);
	clear_bit(NRP_Q_LIVE, &queue->flags);
	nrp_drain_queue(queue, true);
	mutex_unlock(&queue->stop_lock);
}

void nrp_free_queue(struct nrp_queue *queue)
{
	if (!test_bit(NRP_Q_ALLOCATED, &queue->flags))
		return;

	/* a queue never started still has receives posted */
	nrp_stop_queue(queue);
	clear_bit(NRP_Q_ALLOCATED, &queue->flags);

	rdma_destroy_id(queue->cm_id);
	queue->cm_id = NULL;
	nrp_destroy_queue_ib(queue);
}

/* Once per queue, for the life of the controller. */
void nrp_init_queue(struct nrp_ctrl *ctrl, int qid)
{
	struct nrp_queue *queue = &ctrl->queues[qid];

	queue->ctrl = ctrl;
	queue->qid = qid;
	mutex_init(&queue->stop_lock);
	spin_lock_init(&queue->sq_lock);
}

void nrp_exit_queue(struct nrp_queue *queue)
{
	mutex_destroy(&queue->stop_lock);
}
