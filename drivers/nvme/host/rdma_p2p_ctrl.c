// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: controller life cycle.
 *
 * States follow the nvme core: a controller is created CONNECTING and
 * becomes LIVE once its queues are up. Any transport error moves it to
 * RESETTING and queues err_work, which tears all queues down and goes
 * CONNECTING; reconnect_work then retries every reconnect_delay seconds
 * until it succeeds or ctrl_loss_tmo runs out (nvmf_should_reconnect()),
 * when the controller is deleted. Meanwhile the I/O queues stay open:
 * requests of multipath namespaces and FAILFAST ones fail over at once,
 * the rest wait on blk-mq's dispatch lists (nrp_queue_rq()) until the
 * queues are run again: on success, when fast_io_fail_tmo expires (the
 * core's timer, with nrp_failfast_work()) or on delete.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/inet.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "nrp.h"
#include "nrp_trace.h"

/* needs the types nrp.h brings in */
#include <linux/nvme-rdma.h>

static LIST_HEAD(nrp_ctrls);
static DEFINE_MUTEX(nrp_ctrls_lock);
/*
 * Controllers listed once and not yet through free_ctrl. A controller
 * leaves the list when free_ctrl starts (nothing may find it any more)
 * but is counted until free_ctrl is done, which is what module exit
 * waits for. Under nrp_ctrls_lock.
 */
static unsigned int nrp_ctrls_alive;
/* woken whenever nrp_ctrls_alive drops; module exit waits here */
static DECLARE_WAIT_QUEUE_HEAD(nrp_ctrls_freed);

static void nrp_free_io_queues(struct nrp_ctrl *ctrl)
{
	int i;

	for (i = 1; i < ctrl->ctrl.queue_count; i++)
		nrp_free_queue(&ctrl->queues[i]);
}

static void nrp_stop_io_queues(struct nrp_ctrl *ctrl)
{
	int i;

	for (i = 1; i < ctrl->ctrl.queue_count; i++)
		nrp_stop_queue(&ctrl->queues[i]);
}

/*
 * On failure the queues started so far stay live: the caller quiesces the
 * I/O queues before it stops them, as blk-mq may be in queue_rq() on a live
 * one (the queues stay open while the controller reconnects).
 */
static int nrp_start_io_queues(struct nrp_ctrl *ctrl, int first, int last)
{
	int i, ret;

	for (i = first; i < last; i++) {
		ret = nrp_start_queue(ctrl, i);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Ask the controller for as many queues as the options want (capped by
 * usable CPUs, nrp_usable_cpus(), and completion vectors) and split what
 * it grants into default, read and poll queues, in that order of priority.
 */
static int nrp_alloc_io_queues(struct nrp_ctrl *ctrl)
{
	struct nvmf_ctrl_options *opts = ctrl->ctrl.opts;
	struct ib_device *ibdev = ctrl->dev->ibdev;
	unsigned int nr_read, nr_default, nr_poll, cpus = nrp_usable_cpus();
	int nr_io, left, i, ret;

	nr_read = min3(opts->nr_io_queues, cpus,
		       (unsigned int)ibdev->num_comp_vectors);
	nr_default = min3(opts->nr_write_queues, cpus,
			  (unsigned int)ibdev->num_comp_vectors);
	nr_poll = min(opts->nr_poll_queues, cpus);
	nr_io = nr_read + nr_default + nr_poll;

	ret = nvme_set_queue_count(&ctrl->ctrl, &nr_io);
	if (ret)
		return ret;
	if (nr_io <= 0) {
		dev_err(ctrl->ctrl.device,
			"unable to set any I/O queues: the controller granted none\n");
		return -ENOMEM;
	}

	ctrl->ctrl.queue_count = nr_io + 1;
	dev_info(ctrl->ctrl.device, "creating %d I/O queues.\n", nr_io);

	memset(ctrl->io_queues, 0, sizeof(ctrl->io_queues));
	left = nr_io;
	if (opts->nr_write_queues && nr_read < left) {
		/*
		 * Separate read and write queues, but only once reads have
		 * all they asked for: they are the "I/O queues" of the
		 * options.
		 */
		ctrl->io_queues[HCTX_TYPE_READ] = nr_read;
		left -= nr_read;
		ctrl->io_queues[HCTX_TYPE_DEFAULT] = min_t(int, nr_default,
							   left);
		left -= ctrl->io_queues[HCTX_TYPE_DEFAULT];
	} else {
		/* reads and writes share the default queues */
		ctrl->io_queues[HCTX_TYPE_DEFAULT] = min_t(int, nr_read, left);
		left -= ctrl->io_queues[HCTX_TYPE_DEFAULT];
	}
	if (opts->nr_poll_queues && left)
		ctrl->io_queues[HCTX_TYPE_POLL] = min_t(int, nr_poll, left);

	for (i = 1; i < ctrl->ctrl.queue_count; i++) {
		ret = nrp_alloc_queue(ctrl, i, ctrl->ctrl.sqsize + 1);
		if (ret)
			goto out_free_queues;
	}
	return 0;

out_free_queues:
	while (--i >= 1)
		nrp_free_queue(&ctrl->queues[i]);
	return ret;
}

static void nrp_destroy_admin_queue(struct nrp_ctrl *ctrl)
{
	if (ctrl->aen_qe.buf) {
		/* the async event work must not post from a freed buffer */
		cancel_work_sync(&ctrl->ctrl.async_event_work);
		nrp_free_qe(ctrl->dev->ibdev, &ctrl->aen_qe,
			    sizeof(struct nvme_command), DMA_TO_DEVICE);
	}
	nrp_free_queue(&ctrl->queues[0]);
	/* the device is only held by live queues */
	ctrl->dev = NULL;
}

static int nrp_configure_admin_queue(struct nrp_ctrl *ctrl, bool new)
{
	struct ib_device *ibdev;
	int ret;

	ret = nrp_alloc_queue(ctrl, 0, NVME_AQ_DEPTH);
	if (ret)
		return ret;

	ctrl->dev = ctrl->queues[0].dev;
	ibdev = ctrl->dev->ibdev;
	WRITE_ONCE(ctrl->ibdev, ibdev);
	ctrl->ctrl.numa_node = ibdev_to_node(ibdev);
	ctrl->fr_page_list_len = ibdev->attrs.max_fast_reg_page_list_len;
	ctrl->max_fr_pages = nrp_max_fr_pages(ibdev, ctrl->mr_pages_cap);
	/* decided here, where the device is pinned; read by namespace scan */
	WRITE_ONCE(ctrl->p2p_capable, nrp_ibdev_p2p_ok(ibdev));

	/*
	 * The AEN capsule stays mapped for the life of the admin queue; a
	 * device change always rebuilds the queue.
	 */
	ret = nrp_alloc_qe(ibdev, &ctrl->aen_qe, sizeof(struct nvme_command),
			   DMA_TO_DEVICE);
	if (ret)
		goto out_free_queue;

	if (new) {
		ret = nvme_alloc_admin_tag_set(&ctrl->ctrl, &ctrl->admin_set,
					       &nrp_admin_mq_ops,
					       sizeof(struct nrp_request) +
					       NRP_FIRST_SGL_BYTES);
		if (ret)
			goto out_free_aen_qe;
	}

	ret = nrp_start_queue(ctrl, 0);
	if (ret)
		goto out_remove_admin_set;

	ret = nvme_enable_ctrl(&ctrl->ctrl);
	if (ret)
		goto out_stop_queue;

	/*
	 * One FRWR per command bounds its size; Identify then lowers this
	 * further to the controller's MDTS.
	 */
	ctrl->ctrl.max_segments = ctrl->max_fr_pages;
	ctrl->ctrl.max_hw_sectors = ctrl->max_fr_pages <<
				    NRP_SECTORS_PER_PAGE_SHIFT;
	if (READ_ONCE(ctrl->fault_mdts_kb))
		ctrl->ctrl.max_hw_sectors = min(ctrl->ctrl.max_hw_sectors,
						max(READ_ONCE(ctrl->fault_mdts_kb),
						    4U) * 2);
	ctrl->ctrl.max_integrity_segments = 0;

	nrp_unquiesce_admin_queue(&ctrl->ctrl);

	ret = nrp_init_ctrl_finish(&ctrl->ctrl);
	if (ret)
		goto out_quiesce;
	return 0;

out_quiesce:
	nrp_quiesce_admin_queue(&ctrl->ctrl);
	blk_sync_queue(ctrl->ctrl.admin_q);
out_stop_queue:
	nrp_stop_queue(&ctrl->queues[0]);
	nvme_cancel_admin_tagset(&ctrl->ctrl);
out_remove_admin_set:
	if (new) {
		/* a quiesced queue would keep its users' requests forever */
		nrp_unquiesce_admin_queue(&ctrl->ctrl);
		nvme_remove_admin_tag_set(&ctrl->ctrl);
	}
out_free_aen_qe:
	nrp_free_qe(ibdev, &ctrl->aen_qe, sizeof(struct nvme_command),
		    DMA_TO_DEVICE);
out_free_queue:
	nrp_free_queue(&ctrl->queues[0]);
	ctrl->dev = NULL;
	return ret;
}

static int nrp_alloc_io_tag_set(struct nrp_ctrl *ctrl)
{
	return nvme_alloc_io_tag_set(&ctrl->ctrl, &ctrl->io_set,
				     &nrp_io_mq_ops,
				     ctrl->ctrl.opts->nr_poll_queues ?
				     HCTX_MAX_TYPES : 2,
				     sizeof(struct nrp_request) +
				     NRP_FIRST_SGL_BYTES);
}

static void nrp_run_ns_queue(struct nvme_ns *ns, void *unused)
{
	blk_mq_run_hw_queues(ns->queue, true);
}

/*
 * Dispatch again what waits on the I/O queues' dispatch lists. Only run
 * them: a quiesce that a reconnect attempt holds while it tears queues
 * down (its error path) must not be lifted from here, and a quiesced
 * queue does not dispatch; what opens the queues runs them itself
 * (nrp_configure_io_queues(), nrp_stop_ctrl()).
 */
static void nrp_run_io_queues(struct nrp_ctrl *ctrl)
{
	struct nrp_ns_visit v = { .fn = nrp_run_ns_queue };

	nrp_visit_ns(&ctrl->ctrl, &v);
}

/*
 * Whether blk-mq can allocate I/O queue @qid's Connect: only from a
 * hardware context that has an online CPU (blk_mq_alloc_request_hctx(),
 * -EXDEV otherwise). The contexts' CPU masks are those of the last map;
 * a CPU that went offline since stays in them.
 */
static bool nrp_queue_has_online_cpu(struct nrp_ctrl *ctrl, int qid)
{
	struct blk_mq_hw_ctx *hctx;

	hctx = nrp_queue_hctx(ctrl->ctrl.connect_q, qid - 1);
	return hctx && hctx->nr_ctx &&
		cpumask_intersects(hctx->cpumask, cpu_online_mask);
}

/*
 * Start the queues in [@first, @last) that the current map can connect
 * (nrp_queue_has_online_cpu()) and return how many it could not: those
 * stay not LIVE.
 */
static int nrp_start_mapped_io_queues(struct nrp_ctrl *ctrl, int first,
				      int last)
{
	int i, ret, skipped = 0;

	for (i = first; i < last; i++) {
		if (!nrp_queue_has_online_cpu(ctrl, i)) {
			skipped++;
			continue;
		}
		ret = nrp_start_queue(ctrl, i);
		if (ret)
			return ret;
	}
	return skipped;
}

/*
 * blk-mq marks a hardware context INACTIVE when its last online CPU goes
 * offline and clears the mark only when one of its CPUs comes back
 * online (blk_mq_hctx_notify_online()) or the context is made anew, not
 * when a new map gives it online CPUs (blk_mq_map_swqueue()). Every tag
 * allocation on a marked context gives up (blk_mq_get_tag()): the Connect
 * of its queue with -EWOULDBLOCK, the I/O of the CPUs now mapped to it by
 * retrying for ever. After a reconnect remapped contexts whose CPUs all
 * went away (nrp_configure_io_queues()), clear the mark of each one an
 * online CPU maps to, as that callback would for a CPU coming online.
 * blk-mq has no call that does it: 6.1 keeps a context across
 * blk_mq_update_nr_hw_queues() (6.12 makes it anew there, and this finds
 * nothing to clear). This writes blk-mq's own state, which only the CPU
 * hotplug callbacks write besides: the hotplug lock, held for reading,
 * keeps them from running meanwhile, and keeps any CPU from going offline
 * or online between the test and the clear. The tag set's list lock
 * before it, the order blk-mq takes them in itself: a context that
 * blk_mq_update_nr_hw_queues() makes or ends under the list lock has its
 * hotplug callbacks added or removed there, which takes the hotplug lock
 * (cpuhp_state_add_instance_nocalls(), from blk_mq_init_hctx() on 6.1,
 * blk_mq_add_hw_queues_cpuhp() on 6.12).
 */
static void nrp_reactivate_hctxs(struct nrp_ctrl *ctrl)
{
	struct blk_mq_tag_set *set = ctrl->ctrl.tagset;
	struct blk_mq_hw_ctx *hctx;
	struct request_queue *q;
	unsigned long i;
	unsigned int cpu;

	mutex_lock(&set->tag_list_lock);
	cpus_read_lock();
	list_for_each_entry(q, &set->tag_list, tag_set_list) {
		queue_for_each_hw_ctx(q, hctx, i) {
			if (!test_bit(BLK_MQ_S_INACTIVE, &hctx->state))
				continue;
			/* (an unmapped context keeps a stale type on 6.1) */
			if (!hctx->nr_ctx)
				continue;
			for_each_online_cpu(cpu) {
				if (set->map[hctx->type].mq_map[cpu] ==
				    hctx->queue_num) {
					clear_bit(BLK_MQ_S_INACTIVE,
						  &hctx->state);
					break;
				}
			}
		}
	}
	cpus_read_unlock();
	mutex_unlock(&set->tag_list_lock);
}

static int nrp_configure_io_queues(struct nrp_ctrl *ctrl, bool new)
{
	int ret, nr_known, i;

	ret = nrp_alloc_io_queues(ctrl);
	if (ret)
		return ret;

	if (new) {
		ret = nrp_alloc_io_tag_set(ctrl);
		if (ret)
			goto out_free_io_queues;
		/* a new tag set, built for every queue the target granted */
		ret = nrp_start_io_queues(ctrl, 1, ctrl->ctrl.queue_count);
		if (ret)
			goto out_stop_io_queues;
		return 0;
	}

	/*
	 * After a reconnect the controller may grant a different number of
	 * queues than the tag set was built for. Start the ones the tag set
	 * knows, resize it, then start any new ones.
	 *
	 * Where every CPU of a known queue went offline since the last map
	 * (CPU hotplug, SMT switched off), its Connect cannot be allocated
	 * until the map is redone below, which gives each queue a usable CPU
	 * (nrp_map_queues()): start it after that. In-tree fails the attempt
	 * with -EXDEV, every reconnect_delay until ctrl_loss_tmo deletes the
	 * controller. Nothing waits on such a queue: blk-mq drains a context
	 * before its last CPU goes offline (and marks it INACTIVE,
	 * nrp_reactivate_hctxs()).
	 */
	nr_known = min_t(int, ctrl->io_set.nr_hw_queues + 1,
			 ctrl->ctrl.queue_count);
	ret = nrp_start_mapped_io_queues(ctrl, 1, nr_known);
	if (ret < 0)
		goto out_stop_io_queues;
	if (ret)
		dev_info(ctrl->ctrl.device,
			 "%d I/O queue(s) have no online CPU: connecting them after the remap\n",
			 ret);

	/*
	 * Requests waiting on the dispatch lists since the connection went
	 * (nrp_queue_rq()) go out on the new queues now; the freeze waits
	 * for them. The queues are open (err_work, a reset and the last
	 * attempt leave them so) or, where a teardown was cut short,
	 * quiesced: unquiesce what is quiesced and run them all. Not a
	 * quiesce and unquiesce pair, which would run them too: on 6.12
	 * both walk the tag set's queues, and one the scan work adds in
	 * between would be unquiesced without having been quiesced
	 * (nrp_open_io_queues(), nrp_stop_ctrl()).
	 */
	nvme_start_freeze(&ctrl->ctrl);
	nrp_open_io_queues(&ctrl->ctrl);
	nrp_run_io_queues(ctrl);
	if (!nrp_wait_freeze_timeout(&ctrl->ctrl)) {
		/*
		 * Something still holds requests after a full I/O timeout:
		 * better fail this attempt than hang.
		 */
		ret = -ENODEV;
		nvme_unfreeze(&ctrl->ctrl);
		goto out_stop_io_queues;
	}
	blk_mq_update_nr_hw_queues(ctrl->ctrl.tagset,
				   ctrl->ctrl.queue_count - 1);
	nrp_reactivate_hctxs(ctrl);

	/*
	 * Start the queues skipped above and any new ones while the
	 * namespaces are still frozen. I/O that reached a queue not yet
	 * live would wait on its dispatch list (BLK_STS_DEV_RESOURCE,
	 * nrp_queue_rq()) until something else completes on it, which on a
	 * fresh queue may never happen; in-tree starts new queues after the
	 * unfreeze and dispatches such I/O again every 3 ms. The Connects
	 * go through the core's connect queue, which this freeze does not
	 * hold.
	 */
	for (i = 1; i < ctrl->io_set.nr_hw_queues + 1; i++) {
		if (test_bit(NRP_Q_LIVE, &ctrl->queues[i].flags))
			continue;
		ret = nrp_start_queue(ctrl, i);
		if (ret) {
			nvme_unfreeze(&ctrl->ctrl);
			goto out_stop_io_queues;
		}
	}
	nvme_unfreeze(&ctrl->ctrl);
	return 0;

out_stop_io_queues:
	nrp_quiesce_io_queues(&ctrl->ctrl);
	nvme_sync_io_queues(&ctrl->ctrl);
	nrp_stop_io_queues(ctrl);
	nvme_cancel_tagset(&ctrl->ctrl);
	if (new) {
		nrp_unquiesce_io_queues(&ctrl->ctrl);
		nvme_remove_io_tag_set(&ctrl->ctrl);
	}
out_free_io_queues:
	nrp_free_io_queues(ctrl);
	return ret;
}

static void nrp_teardown_admin_queue(struct nrp_ctrl *ctrl, bool remove)
{
	nrp_quiesce_admin_queue(&ctrl->ctrl);
	blk_sync_queue(ctrl->ctrl.admin_q);
	nrp_stop_queue(&ctrl->queues[0]);
	nvme_cancel_admin_tagset(&ctrl->ctrl);
	if (remove) {
		nrp_unquiesce_admin_queue(&ctrl->ctrl);
		nvme_remove_admin_tag_set(&ctrl->ctrl);
	}
	nrp_destroy_admin_queue(ctrl);
}

static void nrp_teardown_io_queues(struct nrp_ctrl *ctrl, bool remove)
{
	if (ctrl->ctrl.queue_count <= 1)
		return;

	nrp_quiesce_io_queues(&ctrl->ctrl);
	nvme_sync_io_queues(&ctrl->ctrl);
	nrp_stop_io_queues(ctrl);
	nvme_cancel_tagset(&ctrl->ctrl);
	if (remove) {
		nrp_unquiesce_io_queues(&ctrl->ctrl);
		nvme_remove_io_tag_set(&ctrl->ctrl);
	}
	nrp_free_io_queues(ctrl);
}

/*
 * status is what the last connect attempt returned (0 when none was made
 * yet): a negative errno or an NVMe status, which may forbid retrying.
 */
static void nrp_reconnect_or_remove(struct nrp_ctrl *ctrl, int status)
{
	enum nvme_ctrl_state state = nvme_ctrl_state(&ctrl->ctrl);

	/* a reset or delete took over */
	if (state != NVME_CTRL_CONNECTING) {
		WARN_ON_ONCE(state == NVME_CTRL_NEW || state == NVME_CTRL_LIVE);
		return;
	}

	nrp_mpath_ctrl_down(ctrl);
	if (nrp_should_reconnect(&ctrl->ctrl, status)) {
		dev_info(ctrl->ctrl.device, "Reconnecting in %d seconds...\n",
			 ctrl->ctrl.opts->reconnect_delay);
		queue_delayed_work(nvme_wq, &ctrl->reconnect_work,
				   ctrl->ctrl.opts->reconnect_delay * HZ);
	} else {
		dev_info(ctrl->ctrl.device,
			 "giving up after %d reconnect attempts, removing\n",
			 ctrl->ctrl.nr_reconnects);
		nvme_delete_ctrl(&ctrl->ctrl);
	}
}

/* Whether a queue of @ctrl sits on an ib_device being removed. */
static bool nrp_ctrl_on_dying_device(struct nrp_ctrl *ctrl)
{
	int i;

	for (i = 0; i < ctrl->ctrl.queue_count; i++) {
		struct nrp_queue *queue = &ctrl->queues[i];

		if (test_bit(NRP_Q_ALLOCATED, &queue->flags) &&
		    nrp_device_dying(queue->dev))
			return true;
	}
	return false;
}

/*
 * The last step of an association, under the list lock against
 * nrp_delete_ctrls_on(): either the device removal marked our device
 * dying before, and we give up, or it finds us LIVE and listed (a new
 * controller is listed here) and deletes us.
 */
static int nrp_go_live(struct nrp_ctrl *ctrl, bool new)
{
	struct nvme_ctrl *nctrl = &ctrl->ctrl;
	int ret = 0;

	mutex_lock(&nrp_ctrls_lock);
	if (nrp_ctrl_on_dying_device(ctrl)) {
		dev_info(nctrl->device,
			 "RDMA device %s is being removed, giving up this association\n",
			 dev_name(&ctrl->ibdev->dev));
		ret = -ENODEV;
		goto out_unlock;
	}
	if (!nvme_change_ctrl_state(nctrl, NVME_CTRL_LIVE)) {
		/*
		 * Only a delete may have overtaken us, and never while the
		 * controller is still being created (the creator would race
		 * the delete work on the teardown).
		 */
		WARN_ON_ONCE(nvme_ctrl_state(nctrl) != NVME_CTRL_DELETING &&
			     nvme_ctrl_state(nctrl) != NVME_CTRL_DELETING_NOIO);
		WARN_ON_ONCE(new);
		ret = -EINVAL;
		goto out_unlock;
	}
	if (new) {
		list_add_tail(&ctrl->node, &nrp_ctrls);
		WRITE_ONCE(nrp_ctrls_alive, nrp_ctrls_alive + 1);
	}
out_unlock:
	mutex_unlock(&nrp_ctrls_lock);
	return ret;
}

static int nrp_setup_ctrl(struct nrp_ctrl *ctrl, bool new)
{
	struct nvme_ctrl *nctrl = &ctrl->ctrl;
	int ret;

	ret = nrp_configure_admin_queue(ctrl, new);
	if (ret)
		goto out_reopen_queues;
	/* P2P on multipath heads, before any path of ours takes I/O */
	nrp_mpath_ctrl_decided(ctrl);

	if (nctrl->icdoff) {
		dev_err(nctrl->device,
			"icdoff is not supported! in-capsule data offset %u\n",
			nctrl->icdoff);
		ret = -EOPNOTSUPP;
		goto out_teardown_admin;
	}

	/* SGLS bit 2: keyed SGL data block descriptors, our only way */
	if (!(nctrl->sgls & (1 << 2))) {
		dev_err(nctrl->device,
			"Mandatory keyed sgls are not supported!\n");
		ret = -EOPNOTSUPP;
		goto out_teardown_admin;
	}

	if (nctrl->opts->queue_size > nctrl->sqsize + 1)
		dev_warn(nctrl->device,
			 "queue_size %zu > ctrl sqsize %u, clamping down\n",
			 nctrl->opts->queue_size, nctrl->sqsize + 1);

	if (nctrl->sqsize + 1 > NVME_RDMA_MAX_QUEUE_SIZE) {
		dev_warn(nctrl->device,
			 "ctrl sqsize %u > max queue size %u, clamping down\n",
			 nctrl->sqsize + 1, NVME_RDMA_MAX_QUEUE_SIZE);
		nctrl->sqsize = NVME_RDMA_MAX_QUEUE_SIZE - 1;
	}

	if (nctrl->sqsize + 1 > nctrl->maxcmd) {
		dev_warn(nctrl->device,
			 "sqsize %u > ctrl maxcmd %u, clamping down\n",
			 nctrl->sqsize + 1, nctrl->maxcmd);
		nctrl->sqsize = nctrl->maxcmd - 1;
	}

	/* debugfs: as if the target's MQES allowed no more */
	if (READ_ONCE(ctrl->fault_queue_size) > 1 &&
	    nctrl->sqsize + 1 > READ_ONCE(ctrl->fault_queue_size)) {
		dev_info(nctrl->device, "fault: queue size %u instead of %u\n",
			 READ_ONCE(ctrl->fault_queue_size), nctrl->sqsize + 1);
		nctrl->sqsize = READ_ONCE(ctrl->fault_queue_size) - 1;
	}

	/* SGLS bit 20: SGL offset descriptors, i.e. in-capsule data */
	ctrl->use_inline = nctrl->sgls & (1 << 20);

	if (nctrl->queue_count > 1) {
		ret = nrp_configure_io_queues(ctrl, new);
		if (ret)
			goto out_teardown_admin;
	}
	/* the queues run: see nrp_mpath_paths_follow() */
	nrp_mpath_paths_follow(ctrl);

	ret = nrp_go_live(ctrl, new);
	if (ret)
		goto out_teardown_io;

	nvme_start_ctrl(nctrl);
	/* heads our scan makes may take P2P */
	nrp_mpath_refresh();
	return 0;

out_teardown_io:
	if (nctrl->queue_count > 1) {
		nrp_quiesce_io_queues(nctrl);
		nvme_sync_io_queues(nctrl);
		nrp_stop_io_queues(ctrl);
		nvme_cancel_tagset(nctrl);
		if (new) {
			nrp_unquiesce_io_queues(nctrl);
			nvme_remove_io_tag_set(nctrl);
		}
		nrp_free_io_queues(ctrl);
	}
out_teardown_admin:
	nrp_teardown_admin_queue(ctrl, new);
out_reopen_queues:
	if (!new) {
		/*
		 * Open between attempts, as after err_work: multipath and
		 * FAILFAST requests must fail over rather than wait for the
		 * next attempt; the rest wait without being redispatched
		 * (nrp_queue_rq()).
		 */
		nrp_open_io_queues(nctrl);
		nrp_unquiesce_admin_queue(nctrl);
	}
	return ret;
}

/*
 * fast_io_fail_tmo after the controller left LIVE, the core marks it
 * FAILFAST_EXPIRED and kicks the multipath heads: from then on queued I/O
 * fails instead of waiting. I/O of our queues that waits for the
 * reconnect on the dispatch lists (nrp_queue_rq()) is not dispatched
 * again by that: this runs the queues, where it now fails. The core's
 * timer and ours start together: if ours comes first it looks again
 * shortly.
 */
static void nrp_failfast_work(struct work_struct *work)
{
	struct nrp_ctrl *ctrl = container_of(to_delayed_work(work),
					     struct nrp_ctrl, failfast_work);

	if (nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_CONNECTING)
		return;
	if (!test_bit(NVME_CTRL_FAILFAST_EXPIRED, &ctrl->ctrl.flags)) {
		queue_delayed_work(nvme_wq, &ctrl->failfast_work, HZ / 10);
		return;
	}
	dev_info(ctrl->ctrl.device,
		 "fast_io_fail_tmo expired, failing queued I/O\n");
	nrp_run_io_queues(ctrl);
}

/* Called on entering CONNECTING, as the core starts its own timer. */
static void nrp_start_failfast(struct nrp_ctrl *ctrl)
{
	int tmo = ctrl->ctrl.opts->fast_io_fail_tmo;

	if (tmo >= 0)
		mod_delayed_work(nvme_wq, &ctrl->failfast_work, tmo * HZ);
}

static void nrp_reconnect_work(struct work_struct *work)
{
	struct nrp_ctrl *ctrl = container_of(to_delayed_work(work),
					     struct nrp_ctrl, reconnect_work);
	int ret;

	++ctrl->ctrl.nr_reconnects;
	nrp_stat_inc(ctrl, NRP_STAT_RECONNECT_ATTEMPTS);

	ret = nrp_setup_ctrl(ctrl, false);
	trace_nrp_reconnect(ctrl, ctrl->ctrl.nr_reconnects, ret);
	if (ret) {
		/* in-tree wording, then the reason (ours) */
		dev_info(ctrl->ctrl.device, "Failed reconnect attempt %d: %d\n",
			 ctrl->ctrl.nr_reconnects, ret);
		nrp_reconnect_or_remove(ctrl, ret);
		return;
	}

	nrp_stat_inc(ctrl, NRP_STAT_RECONNECTS);
	dev_info(ctrl->ctrl.device, "Successfully reconnected (%d attempts)\n",
		 ctrl->ctrl.nr_reconnects);
	ctrl->ctrl.nr_reconnects = 0;
}

static void nrp_err_work(struct work_struct *work)
{
	struct nrp_ctrl *ctrl = container_of(work, struct nrp_ctrl, err_work);

	nvme_stop_keep_alive(&ctrl->ctrl);
	flush_work(&ctrl->ctrl.async_event_work);
	/*
	 * Open the I/O queues again, as in-tree does: a request of a
	 * multipath namespace (or a FAILFAST one) queued here, waiting for
	 * a tag or on a dispatch list, must fail over to another path now,
	 * not when we reconnect or ctrl_loss_tmo runs out. The others wait
	 * on the dispatch lists without being redispatched (nrp_queue_rq()).
	 */
	nrp_teardown_io_queues(ctrl, false);
	nrp_teardown_admin_queue(ctrl, false);
	nrp_open_io_queues(&ctrl->ctrl);
	nrp_unquiesce_admin_queue(&ctrl->ctrl);
	nvme_auth_stop(&ctrl->ctrl);

	if (!nvme_change_ctrl_state(&ctrl->ctrl, NVME_CTRL_CONNECTING)) {
		/* only a delete may have overtaken the recovery */
		WARN_ON_ONCE(nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_DELETING &&
			     nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_DELETING_NOIO);
		return;
	}

	nrp_start_failfast(ctrl);
	nrp_reconnect_or_remove(ctrl, 0);
}

/*
 * Any context, any number of times: only the caller that moves a LIVE
 * controller to RESETTING queues the recovery.
 */
void nrp_error_recovery(struct nrp_ctrl *ctrl)
{
	if (!nvme_change_ctrl_state(&ctrl->ctrl, NVME_CTRL_RESETTING))
		return;

	nrp_stat_inc(ctrl, NRP_STAT_RECOVERIES);
	trace_nrp_error_recovery(ctrl);
	dev_warn(ctrl->ctrl.device, "starting error recovery\n");
	queue_work(nvme_reset_wq, &ctrl->err_work);
}

static void nrp_shutdown_ctrl(struct nrp_ctrl *ctrl, bool shutdown)
{
	nrp_teardown_io_queues(ctrl, shutdown);
	nrp_quiesce_admin_queue(&ctrl->ctrl);
	nrp_disable_ctrl(&ctrl->ctrl, shutdown);
	nrp_teardown_admin_queue(ctrl, shutdown);
}

static void nrp_reset_work(struct work_struct *work)
{
	struct nrp_ctrl *ctrl = container_of(work, struct nrp_ctrl,
					     ctrl.reset_work);
	int ret;

	nvme_stop_ctrl(&ctrl->ctrl);
	nrp_teardown_io_queues(ctrl, false);
	/*
	 * Open the I/O queues again at once, as err_work does: a request of
	 * a multipath namespace (or a FAILFAST one) waiting here unstarted
	 * must fail over to another path now, not when the first connect
	 * attempt ends (up to the bound of a connect, against a target that
	 * stopped answering), nor after the disable below, which waits for
	 * such a target too. The others wait on the dispatch lists without
	 * being redispatched (nrp_queue_rq()). In-tree keeps them quiesced.
	 */
	nrp_open_io_queues(&ctrl->ctrl);
	nrp_quiesce_admin_queue(&ctrl->ctrl);
	nrp_disable_ctrl(&ctrl->ctrl, false);
	nrp_teardown_admin_queue(ctrl, false);

	if (!nvme_change_ctrl_state(&ctrl->ctrl, NVME_CTRL_CONNECTING)) {
		/*
		 * Only a delete may have overtaken the reset (the core
		 * allows RESETTING -> DELETING): a reset_controller and a
		 * delete_controller written at once. In-tree WARNs on any
		 * failure here; that would be a WARN anyone with sysfs
		 * access can trigger. The delete finds the queues shut down.
		 */
		WARN_ON_ONCE(nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_DELETING &&
			     nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_DELETING_NOIO);
		return;
	}
	nrp_start_failfast(ctrl);

	ret = nrp_setup_ctrl(ctrl, false);
	if (ret) {
		++ctrl->ctrl.nr_reconnects;
		nrp_reconnect_or_remove(ctrl, ret);
	}
}

static void nrp_stop_ctrl(struct nvme_ctrl *nctrl)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(nctrl);

	flush_work(&ctrl->err_work);
	cancel_delayed_work_sync(&ctrl->reconnect_work);
	cancel_delayed_work_sync(&ctrl->failfast_work);

	/*
	 * A delete: I/O waiting on the dispatch lists for a reconnect
	 * (nrp_queue_rq()) must now fail (it finds the queues not live), or
	 * removing the namespaces would wait for it forever. No attempt
	 * runs any more (err_work, reconnect and reset are over): open the
	 * queues if the last attempt left them quiesced, and run them.
	 *
	 * Not a quiesce and unquiesce pair, which would run them too: the
	 * scan work may still be adding a namespace (a delete right after
	 * the connect; nvme_remove_namespaces() flushes it only after us).
	 * On 6.12 both walk the tag set's list of queues (6.1 marks each
	 * namespace stopped), so a queue that joins between the two is
	 * unquiesced without having been quiesced, and blk-mq WARNs: seen
	 * on 6.12 with 240 possible CPUs, which make a new queue slower to
	 * set up. Opening acts only on what the core marked stopped (6.12's
	 * nvme_remove_namespaces() unquiesces again, 6.1's does not), and
	 * where it is marked (a reset the delete cut short) only on the
	 * queues that are quiesced, not on one the scan added meanwhile
	 * (nrp_open_io_queues()); in-tree's walk meets that one and WARNs.
	 */
	switch (nvme_ctrl_state(nctrl)) {
	case NVME_CTRL_DELETING:
	case NVME_CTRL_DELETING_NOIO:
		nrp_open_io_queues(nctrl);
		nrp_run_io_queues(ctrl);
		/*
		 * The admin queue too: a reset that the delete overtook
		 * (nrp_reset_work()) leaves it quiesced, and a scan that
		 * submitted an Identify after that waits there for ever,
		 * while nvme_remove_namespaces() waits for the scan (seen: a
		 * reset_controller and a delete_controller written right
		 * after a connect). Open, it fails that command at once (the
		 * queue is not live). In-tree does not, and has the same
		 * hang; the delete quiesces the queue again to shut down.
		 */
		nrp_unquiesce_admin_queue(nctrl);
		break;
	default:
		break;
	}
}

static void nrp_delete_ctrl(struct nvme_ctrl *nctrl)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(nctrl);

	/* before the name "nvmeN" can be handed to a new controller */
	nrp_stats_unregister(ctrl);
	/* its paths leave: heads may take P2P again (rdma_p2p_mpath.c) */
	nrp_mpath_ctrl_del(ctrl);
	nrp_shutdown_ctrl(ctrl, true);
}

static void nrp_free_ctrl(struct nvme_ctrl *nctrl)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(nctrl);
	bool listed = !list_empty(&ctrl->node);
	u32 i;

	nrp_stats_unregister(ctrl);
	nrp_mpath_ctrl_del(ctrl);
	/*
	 * An unlisted controller failed creation: the fabrics core still
	 * owns and frees its options, and module exit never waited for it.
	 */
	if (listed) {
		mutex_lock(&nrp_ctrls_lock);
		list_del_init(&ctrl->node);
		mutex_unlock(&nrp_ctrls_lock);
		nvmf_free_options(nctrl->opts);
	}
	nrp_fault_free_delay();
	for (i = 0; i < ctrl->nr_queues_max; i++)
		nrp_exit_queue(&ctrl->queues[i]);
	kvfree(ctrl->queues);
	kfree(ctrl);
	if (!listed)
		return;

	/*
	 * Last: module exit returns once the count is zero, and everything
	 * after this point is module text. What remains is the unlock and
	 * our return, which exit covers by taking the lock once more.
	 */
	mutex_lock(&nrp_ctrls_lock);
	WRITE_ONCE(nrp_ctrls_alive, nrp_ctrls_alive - 1);
	wake_up_all(&nrp_ctrls_freed);
	mutex_unlock(&nrp_ctrls_lock);
}

static bool nrp_supports_pci_p2pdma(struct nvme_ctrl *nctrl)
{
	return READ_ONCE(to_nrp_ctrl(nctrl)->p2p_capable);
}

/*
 * The name shows in /sys/class/nvme/nvmeX/transport and in the uevents'
 * NVME_TRTYPE, which nvme-cli reads back (duplicate checks, udev's
 * autoconnect): it is the name we registered under, see
 * nrp_init_ctrl_ops(), which also fills in the ops only some kernels
 * have. Read-only once the module is initialised.
 */
static struct nvme_ctrl_ops nrp_ctrl_ops __ro_after_init = {
	.name			= "rdma",
	.module			= THIS_MODULE,
	.flags			= NVME_F_FABRICS,
	.reg_read32		= nvmf_reg_read32,
	.reg_read64		= nvmf_reg_read64,
	.reg_write32		= nvmf_reg_write32,
	.subsystem_reset	= nvmf_subsystem_reset,
	.free_ctrl		= nrp_free_ctrl,
	.submit_async_event	= nrp_submit_async_event,
	.delete_ctrl		= nrp_delete_ctrl,
	.stop_ctrl		= nrp_stop_ctrl,
	.get_address		= nvmf_get_address,
	.supports_pci_p2pdma	= nrp_supports_pci_p2pdma,
};

bool nrp_is_our_ctrl(struct nvme_ctrl *nctrl)
{
	return nctrl->ops == &nrp_ctrl_ops;
}

void __init nrp_init_ctrl_ops(const char *name)
{
	nrp_ctrl_ops.name = name;
	nrp_ops_set_virt_boundary(&nrp_ctrl_ops);
}

/*
 * Same association as an existing controller: same host NQN and ID,
 * subsystem NQN, target address and port, and host address (where one
 * was given).
 */
static bool nrp_ctrl_exists(struct nvmf_ctrl_options *opts)
{
	struct nrp_ctrl *ctrl;
	bool found = false;

	mutex_lock(&nrp_ctrls_lock);
	list_for_each_entry(ctrl, &nrp_ctrls, node) {
		if (nvmf_ip_options_match(&ctrl->ctrl, opts)) {
			found = true;
			break;
		}
	}
	mutex_unlock(&nrp_ctrls_lock);
	return found;
}

static int nrp_parse_addresses(struct nrp_ctrl *ctrl,
			       struct nvmf_ctrl_options *opts)
{
	int ret;

	if (!(opts->mask & NVMF_OPT_TRSVCID)) {
		opts->trsvcid = kstrdup(__stringify(NVME_RDMA_IP_PORT),
					GFP_KERNEL);
		if (!opts->trsvcid)
			return -ENOMEM;
		opts->mask |= NVMF_OPT_TRSVCID;
	}

	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, opts->traddr,
				   opts->trsvcid, &ctrl->dst_addr);
	if (ret) {
		pr_err("malformed target address %s port %s: need an IPv4 or IPv6 address and a port number\n",
		       opts->traddr, opts->trsvcid);
		return ret;
	}

	if (opts->mask & NVMF_OPT_HOST_TRADDR) {
		ret = inet_pton_with_scope(&init_net, AF_UNSPEC,
					   opts->host_traddr, NULL,
					   &ctrl->src_addr);
		if (ret) {
			pr_err("malformed host_traddr %s: need an IPv4 or IPv6 address\n",
			       opts->host_traddr);
			return ret;
		}
		if (ctrl->src_addr.ss_family != ctrl->dst_addr.ss_family) {
			pr_err("host_traddr %s and traddr %s are of different address families\n",
			       opts->host_traddr, opts->traddr);
			return -EINVAL;
		}
	}
	return 0;
}

struct nvme_ctrl *nrp_create_ctrl(struct device *dev,
				  struct nvmf_ctrl_options *opts)
{
	struct nrp_ctrl *ctrl;
	int i, ret;

	ctrl = kzalloc_obj(*ctrl, GFP_KERNEL);
	if (!ctrl)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&ctrl->node);
	INIT_LIST_HEAD(&ctrl->mpath_node);
	ctrl->ctrl.opts = opts;

	ret = nrp_parse_addresses(ctrl, opts);
	if (ret)
		goto out_free_ctrl;

	/* before nvme_init_ctrl(): see nrp_check_dhchap_secret() */
	ret = nrp_check_dhchap_secret(opts->dhchap_secret);
	if (!ret)
		ret = nrp_check_dhchap_secret(opts->dhchap_ctrl_secret);
	if (ret) {
		pr_err("malformed DH-HMAC-CHAP secret for %s: %d\n",
		       opts->subsysnqn, ret);
		goto out_free_ctrl;
	}

	if (!opts->duplicate_connect && nrp_ctrl_exists(opts)) {
		pr_debug("already connected to %s at %pISpcs\n",
			 opts->subsysnqn, &ctrl->dst_addr);
		ret = -EALREADY;
		goto out_free_ctrl;
	}

	INIT_DELAYED_WORK(&ctrl->reconnect_work, nrp_reconnect_work);
	INIT_DELAYED_WORK(&ctrl->failfast_work, nrp_failfast_work);
	INIT_WORK(&ctrl->err_work, nrp_err_work);
	INIT_WORK(&ctrl->ctrl.reset_work, nrp_reset_work);

	/*
	 * Sized for the most queues the controller may ever get: the queue
	 * set-up caps each kind at the CPUs online, and CPUs may come online
	 * between two associations, so up to nr_cpu_ids of each. The fabrics
	 * options leave nr_write_queues and nr_poll_queues uncapped. On a
	 * host of 224 possible CPUs that is up to 673 entries, which is why
	 * an entry (counters included) is small and nothing in it is per CPU.
	 */
	ctrl->nr_queues_max = 1 + min(opts->nr_io_queues, nr_cpu_ids) +
			      min(opts->nr_write_queues, nr_cpu_ids) +
			      min(opts->nr_poll_queues, nr_cpu_ids);
	ctrl->ctrl.queue_count = ctrl->nr_queues_max;
	ctrl->ctrl.sqsize = opts->queue_size - 1;
	ctrl->ctrl.kato = opts->kato;
	ctrl->remote_inv = true;
	ctrl->mr_pages_cap = READ_ONCE(nrp_max_mr_pages);

	/* sized for the most the controller can grant; it may grant less */
	ctrl->queues = kvcalloc(ctrl->nr_queues_max, sizeof(*ctrl->queues),
				GFP_KERNEL);
	if (!ctrl->queues) {
		ret = -ENOMEM;
		goto out_free_ctrl;
	}
	for (i = 0; i < ctrl->nr_queues_max; i++)
		nrp_init_queue(ctrl, i);

	ret = nvme_init_ctrl(&ctrl->ctrl, dev, &nrp_ctrl_ops, 0);
	if (ret)
		goto out_free_queues;

	/* from here on the nvme core owns ctrl: errors go through put */
	ret = nrp_add_ctrl(&ctrl->ctrl);
	if (ret)
		goto out_put_ctrl;
	/* with its device in the nvme class; free_ctrl removes it */
	nrp_mpath_ctrl_add(ctrl);

	if (!nvme_change_ctrl_state(&ctrl->ctrl, NVME_CTRL_CONNECTING))
		WARN_ON_ONCE(1);

	/* before it can be listed and deleted; free_ctrl removes it */
	nrp_stats_register(ctrl);

	/* lists the controller once it is LIVE */
	ret = nrp_setup_ctrl(ctrl, true);
	if (ret)
		goto out_uninit_ctrl;

	/*
	 * The wording of in-tree 6.12, which names the host NQN; 6.1's line
	 * is the same without it, so scripts matching either still match.
	 */
	dev_info(ctrl->ctrl.device,
		 "new ctrl: NQN \"%s\", addr %pISpcs, hostnqn: %s\n",
		 nvmf_ctrl_subsysnqn(&ctrl->ctrl), &ctrl->dst_addr,
		 ctrl->ctrl.opts->host->nqn);

	return &ctrl->ctrl;

out_uninit_ctrl:
	/* before the core can tear down what a walk of ours would visit */
	nrp_mpath_ctrl_del(ctrl);
	nvme_uninit_ctrl(&ctrl->ctrl);
out_put_ctrl:
	nvme_put_ctrl(&ctrl->ctrl);
	/* a positive value is an NVMe status from Connect or Identify */
	if (ret > 0)
		ret = -EIO;
	return ERR_PTR(ret);
out_free_queues:
	for (i = 0; i < ctrl->nr_queues_max; i++)
		nrp_exit_queue(&ctrl->queues[i]);
	kvfree(ctrl->queues);
out_free_ctrl:
	kfree(ctrl);
	return ERR_PTR(ret);
}

/*
 * The ib_device is going away: delete every controller that used it, make
 * the ones being created or reconnecting onto it give up, and return once
 * none of our queues holds anything on it. A device we never used costs
 * nothing, and other controllers' deletes are not waited for.
 */
void nrp_delete_ctrls_on(struct ib_device *ibdev, const char *why)
{
	struct nrp_dying dying = { .ibdev = ibdev };
	struct nrp_ctrl *ctrl;

	/* from here on no queue builds anything on ibdev */
	if (!nrp_device_mark_dying(&dying))
		goto out_wait;

	mutex_lock(&nrp_ctrls_lock);
	list_for_each_entry(ctrl, &nrp_ctrls, node) {
		if (READ_ONCE(ctrl->ibdev) != ibdev)
			continue;
		dev_info(ctrl->ctrl.device,
			 "deleting controller on %s: %s\n",
			 dev_name(&ibdev->dev), why);
		nvme_delete_ctrl(&ctrl->ctrl);
	}
	mutex_unlock(&nrp_ctrls_lock);

out_wait:
	/* also unmarks: a controller being set up may still hold it */
	nrp_device_wait_unused(&dying);
}

/* Module unload: delete everything and wait until all of it is freed. */
void nrp_delete_all_ctrls(void)
{
	struct nrp_ctrl *ctrl;

	mutex_lock(&nrp_ctrls_lock);
	list_for_each_entry(ctrl, &nrp_ctrls, node)
		nvme_delete_ctrl(&ctrl->ctrl);
	mutex_unlock(&nrp_ctrls_lock);

	flush_workqueue(nvme_delete_wq);

	/*
	 * free_ctrl is our code and runs on the last reference to a
	 * controller, which a user of its sysfs files may still hold for a
	 * moment after the delete: the module text must outlive it.
	 */
	while (!wait_event_timeout(nrp_ctrls_freed, !READ_ONCE(nrp_ctrls_alive),
				   10 * HZ))
		pr_warn("waiting for deleted controllers to be released\n");
	/* the last free_ctrl is past its unlock once we get the lock */
	mutex_lock(&nrp_ctrls_lock);
	mutex_unlock(&nrp_ctrls_lock);
}
