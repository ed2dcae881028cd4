// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: PCI P2PDMA through native NVMe multipath.
 *
 * With nvme_core's multipath=Y (Debian's default) applications use the
 * head disk of a namespace, which routes each bio to one of its paths. The
 * nvme core never marks a head as able to take P2PDMA pages (Linux gained
 * that in 7.2), so P2P submitters refuse it. We mark it, exactly while
 * every controller of its subsystem is one of ours that can carry P2P: a
 * P2P page must never be routed to a path that cannot map it, and the
 * head's routing is the core's, not ours.
 *
 * A controller that cannot carry P2P (another transport's, or one of ours
 * on a device without P2P) is seen before any path of it can take I/O: a
 * class interface on the nvme class reports each controller as the core
 * adds its device, before it connects, identifies and scans namespaces;
 * ours decide in their set-up, before going live. A controller of
 * another transport withdraws P2P from every head until the core knows
 * its subsystem from Identify (the NQN a fabrics controller connected to
 * is no evidence of it), then from that subsystem's heads.
 *
 * Withdrawing P2P from a head also fails (BLK_STS_TARGET, -EREMOTEIO to
 * the submitter) what P2P I/O already waits in the head for a path, and
 * the P2P requests of our paths that would otherwise fail over to the new
 * one (nrp_p2p_block_failover()). See Documentation/design.rst for the
 * windows that remain.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "nrp.h"

/* A controller of another transport (or a PCIe one), as the core added it. */
struct nrp_foreign {
	struct nvme_ctrl	*ctrl;
	struct list_head	node;
};

/* Serialises decisions and their application to the heads. */
static DEFINE_MUTEX(nrp_mpath_lock);
static LIST_HEAD(nrp_foreign_ctrls);
/*
 * Ours, from creation to delete (nrp_ctrls lists only those once live):
 * a deleted one may be freed, its namespace list with it, while a walk of
 * ours could still visit it.
 */
static LIST_HEAD(nrp_mpath_ctrls);
/*
 * We may not see every controller (the class interface could not be
 * registered, a record could not be allocated): then no head is marked.
 */
static bool nrp_mpath_blind;
/*
 * The class interface is registered, and module exit must unregister it:
 * not the same as !nrp_mpath_blind, which a failed record allocation also
 * clears while the interface stays registered.
 */
static bool nrp_mpath_registered;
/* rounds of the poll for controllers whose subsystem is unknown */
static unsigned int nrp_unknown_polls;
/*
 * Re-decides every subsystem: after a scan of ours made heads, after a
 * foreign controller went or told its subsystem. Polls while a foreign
 * controller's subsystem is unknown.
 */
static struct delayed_work nrp_mpath_work;
static struct workqueue_struct *nrp_mpath_wq;
/* debugfs fault_track_nomem: record allocations still to fail */
static atomic_t nrp_fault_track_count;

static bool nrp_fault_track_nomem(void)
{
	return !nrp_faults_off() &&
	       atomic_add_unless(&nrp_fault_track_count, -1, 0);
}

/*
 * The subsystem @ctrl belongs to, as the core has it from Identify; NULL
 * until then. Not the NQN a fabrics controller connected to: the core
 * groups paths by Identify's SUBNQN, and neither the fabrics code nor the
 * target has to make the two agree.
 */
static const char *nrp_ctrl_subnqn(struct nvme_ctrl *ctrl)
{
	struct nvme_subsystem *subsys = READ_ONCE(ctrl->subsys);

	return subsys ? subsys->subnqn : NULL;
}

/*
 * A controller connected as a discovery controller: the fabrics options
 * take its I/O queues away, so it is never a path, whatever it reports.
 */
static bool nrp_ctrl_is_discovery(struct nvme_ctrl *ctrl)
{
	return (ctrl->ops->flags & NVME_F_FABRICS) && ctrl->opts &&
	       ctrl->opts->discovery_nqn;
}

/* Whether heads of subsystem @subnqn may take P2P pages. */
static bool nrp_subsys_p2p_ok(const char *subnqn)
{
	struct nrp_foreign *f;
	struct nrp_ctrl *ctrl;
	const char *nqn;

	lockdep_assert_held(&nrp_mpath_lock);
	if (!nrp_kernel_has_p2pdma() || nrp_mpath_blind)
		return false;
	list_for_each_entry(f, &nrp_foreign_ctrls, node) {
		nqn = nrp_ctrl_subnqn(f->ctrl);
		if (!nqn || !strcmp(nqn, subnqn))
			return false;
	}
	/*
	 * One of ours that has not decided yet has no namespace; one that
	 * reconnects keeps its last decision, while its paths are disabled.
	 */
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node) {
		nqn = nrp_ctrl_subnqn(&ctrl->ctrl);
		if (nqn && !strcmp(nqn, subnqn) && ctrl->p2p_decided &&
		    !READ_ONCE(ctrl->p2p_capable))
			return false;
	}
	return true;
}

static bool nrp_bio_has_p2p(struct bio *bio)
{
	struct bvec_iter iter;
	struct bio_vec bv;

	/* a multi-page vector never mixes P2P and host pages */
	bio_for_each_bvec(bv, bio, iter)
		if (nrp_is_p2p_page(bv.bv_page))
			return true;
	return false;
}

#ifdef CONFIG_NVME_MULTIPATH
/*
 * P2P bios that wait in @head for a path (no path was usable when they
 * came, or their path failed) must not be sent down the path that made
 * the head lose P2P: they fail, the rest stay. The list is taken under the
 * head's lock and sorted without it. (Not waiting for the head's requeue
 * work: a flush here, under the namespace list's lock and, for a new
 * controller, the nvme class's, could wait for I/O that waits for those.)
 */
static void nrp_head_fail_p2p_waiting(struct nvme_ns_head *head)
{
	struct bio_list keep = BIO_EMPTY_LIST, fail = BIO_EMPTY_LIST;
	struct bio *bio, *all;

	spin_lock_irq(&head->requeue_lock);
	all = bio_list_get(&head->requeue_list);
	spin_unlock_irq(&head->requeue_lock);
	while ((bio = all)) {
		all = bio->bi_next;
		bio->bi_next = NULL;
		bio_list_add(nrp_bio_has_p2p(bio) ? &fail : &keep, bio);
	}
	spin_lock_irq(&head->requeue_lock);
	bio_list_merge_head(&head->requeue_list, &keep);
	spin_unlock_irq(&head->requeue_lock);
	while ((bio = bio_list_pop(&fail))) {
		bio->bi_status = BLK_STS_TARGET;
		bio_endio(bio);
	}
}
#else
static void nrp_head_fail_p2p_waiting(struct nvme_ns_head *head)
{
}
#endif

static void nrp_head_set_p2p(struct nvme_ns_head *head, bool on)
{
	struct request_queue *q = head->disk->queue;

	if (!!blk_queue_pci_p2pdma(q) == on)
		return;
	nrp_queue_set_p2pdma(q, on);
	pr_info("%s: PCI P2PDMA %s\n", head->disk->disk_name,
		on ? "on: every path can carry it" :
		     "off: a controller of its subsystem cannot carry it");
	if (!on)
		nrp_head_fail_p2p_waiting(head);
}

/*
 * Whether @ns is a path of a multipath head disk. The head's disk exists
 * from its first path on; it may go live later (an ANA state change), and
 * is marked before that, so that the mark is right when it does.
 */
static bool nrp_ns_has_head(struct nvme_ns *ns)
{
	return nvme_ns_head_multipath(ns->head);
}

static void nrp_ns_head_set_p2p(struct nvme_ns *ns, void *on)
{
	if (nrp_ns_has_head(ns))
		nrp_head_set_p2p(ns->head, *(bool *)on);
}

/* Mark or unmark the heads that the namespaces of @ctrl belong to. */
static void nrp_ctrl_heads_set_p2p(struct nrp_ctrl *ctrl, bool on)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_head_set_p2p, .data = &on };

	nrp_visit_ns(&ctrl->ctrl, &v);
}

/* Decide for the subsystem of @ctrl and apply it to its heads. */
static void nrp_mpath_apply(struct nrp_ctrl *ctrl)
{
	const char *nqn = nrp_ctrl_subnqn(&ctrl->ctrl);

	lockdep_assert_held(&nrp_mpath_lock);
	if (!nqn || nrp_ctrl_is_discovery(&ctrl->ctrl))
		return;
	nrp_ctrl_heads_set_p2p(ctrl, nrp_subsys_p2p_ok(nqn));
}

/* Decide for every subsystem of ours. */
static void nrp_mpath_apply_all(void)
{
	struct nrp_ctrl *ctrl;

	lockdep_assert_held(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		nrp_mpath_apply(ctrl);
}

/* A foreign controller of @nqn (NULL: unknown) arrived: withdraw now. */
static void nrp_mpath_withdraw(const char *nqn)
{
	struct nrp_ctrl *ctrl;
	const char *ours;

	lockdep_assert_held(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node) {
		ours = nrp_ctrl_subnqn(&ctrl->ctrl);
		if (!nqn || (ours && !strcmp(ours, nqn)))
			nrp_ctrl_heads_set_p2p(ctrl, false);
	}
}

static bool nrp_foreign_unknown(void)
{
	struct nrp_foreign *f;

	lockdep_assert_held(&nrp_mpath_lock);
	list_for_each_entry(f, &nrp_foreign_ctrls, node)
		if (!nrp_ctrl_subnqn(f->ctrl))
			return true;
	return false;
}

static void nrp_mpath_work_fn(struct work_struct *work)
{
	struct nrp_ctrl *ctrl, **ctrls;
	int i, n = 0;

	/*
	 * Heads are made by the core's namespace scan: wait for the scans
	 * of ours to finish, on references taken under the lock, with the
	 * lock dropped (a scan must never wait for us).
	 */
	mutex_lock(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		n++;
	ctrls = kcalloc(n, sizeof(*ctrls), GFP_KERNEL);
	n = 0;
	if (ctrls) {
		/* a controller on its last reference is being freed: skip */
		list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
			if (kobject_get_unless_zero(&ctrl->ctrl.device->kobj))
				ctrls[n++] = ctrl;
	}
	mutex_unlock(&nrp_mpath_lock);
	for (i = 0; i < n; i++) {
		flush_work(&ctrls[i]->ctrl.scan_work);
		put_device(ctrls[i]->ctrl.device);
	}
	kfree(ctrls);

	mutex_lock(&nrp_mpath_lock);
	nrp_mpath_apply_all();
	/*
	 * Every 50 ms for a second, then every second: a controller tells
	 * its subsystem when it identifies (a PCIe one within milliseconds,
	 * a fabrics one after its admin queue's connect); one that never
	 * does (a dead device) keeps every head unmarked, and says so once.
	 */
	if (nrp_foreign_unknown()) {
		if (++nrp_unknown_polls == 20)
			pr_warn("a controller of another transport has not told its subsystem for a second: no PCI P2PDMA on multipath heads until it does\n");
		queue_delayed_work(nrp_mpath_wq, &nrp_mpath_work,
				   nrp_unknown_polls < 20 ? HZ / 20 : HZ);
	} else {
		nrp_unknown_polls = 0;
	}
	mutex_unlock(&nrp_mpath_lock);
}

/* Re-decide every subsystem soon, after scans running now. */
void nrp_mpath_refresh(void)
{
	mod_delayed_work(nrp_mpath_wq, &nrp_mpath_work, 0);
}

/*
 * The class interface's callbacks: a controller device of any transport
 * was added to or removed from the nvme class. Ours are handled by their
 * own set-up and free.
 */
static int nrp_nvme_dev_add(NRP_CLASS_INTF_PARAMS)
{
	struct nvme_ctrl *nctrl = dev_get_drvdata(dev);
	struct nrp_foreign *f;
	const char *nqn;

	if (!nctrl || nrp_is_our_ctrl(nctrl) || nrp_ctrl_is_discovery(nctrl))
		return 0;
	/* NULL but when the interface was registered after it identified */
	nqn = nrp_ctrl_subnqn(nctrl);
	f = nrp_fault_track_nomem() ? NULL : kzalloc_obj(*f, GFP_KERNEL);
	mutex_lock(&nrp_mpath_lock);
	if (f) {
		f->ctrl = nctrl;
		list_add(&f->node, &nrp_foreign_ctrls);
	} else {
		/* it cannot be remembered: no head is marked from now on */
		pr_err("no memory to track a controller of another transport: no PCI P2PDMA on multipath heads\n");
		nrp_mpath_blind = true;
		nqn = NULL;
	}
	nrp_mpath_withdraw(nqn);
	if (!nqn)
		queue_delayed_work(nrp_mpath_wq, &nrp_mpath_work, HZ / 20);
	mutex_unlock(&nrp_mpath_lock);
	return 0;
}

static void nrp_nvme_dev_remove(NRP_CLASS_INTF_PARAMS)
{
	struct nvme_ctrl *nctrl = dev_get_drvdata(dev);
	struct nrp_foreign *f;

	mutex_lock(&nrp_mpath_lock);
	list_for_each_entry(f, &nrp_foreign_ctrls, node) {
		if (f->ctrl == nctrl) {
			list_del(&f->node);
			kfree(f);
			/* its paths are gone: P2P may come back */
			nrp_mpath_refresh();
			break;
		}
	}
	mutex_unlock(&nrp_mpath_lock);
}

static struct class_interface nrp_nvme_intf = {
	.add_dev	= nrp_nvme_dev_add,
	.remove_dev	= nrp_nvme_dev_remove,
};

/*
 * @ctrl was created (its device is in the nvme class). The nvme class is
 * nvme_core's and not exported: the interface is registered on the class
 * of our first controller's device. It reports every controller there
 * is, and every one added from then on.
 */
void nrp_mpath_ctrl_add(struct nrp_ctrl *ctrl)
{
	bool reg;

	mutex_lock(&nrp_mpath_lock);
	list_add(&ctrl->mpath_node, &nrp_mpath_ctrls);
	reg = !nrp_nvme_intf.class;
	if (reg)
		nrp_nvme_intf.class = ctrl->ctrl.device->class;
	mutex_unlock(&nrp_mpath_lock);
	if (!reg)
		return;
	/* (outside our lock: add_dev takes it under the class's mutex) */
	if (class_interface_register(&nrp_nvme_intf)) {
		/* never seeing other controllers, P2P on heads is never safe */
		pr_err("cannot watch the nvme class: no PCI P2PDMA on multipath heads\n");
		mutex_lock(&nrp_mpath_lock);
		nrp_mpath_blind = true;
		mutex_unlock(&nrp_mpath_lock);
		/* registered or not, the interface is never registered again */
		return;
	}
	/* only module exit reads it, after every controller of ours is gone */
	nrp_mpath_registered = true;
}

/*
 * @ctrl has decided whether it can carry P2P (a new association): before
 * it goes live, so before any path of it can take I/O.
 */
void nrp_mpath_ctrl_decided(struct nrp_ctrl *ctrl)
{
	mutex_lock(&nrp_mpath_lock);
	ctrl->p2p_decided = true;
	nrp_mpath_apply(ctrl);
	mutex_unlock(&nrp_mpath_lock);
}

/*
 * @ctrl is being deleted (or its creation failed): off the list before the
 * core can free its namespace list, and the heads its paths leave may take
 * P2P again.
 */
void nrp_mpath_ctrl_del(struct nrp_ctrl *ctrl)
{
	bool listed;

	mutex_lock(&nrp_mpath_lock);
	listed = !list_empty(&ctrl->mpath_node);
	if (listed)
		list_del_init(&ctrl->mpath_node);
	mutex_unlock(&nrp_mpath_lock);
	if (listed)
		nrp_mpath_refresh();
}

/* Whether the head of multipath request @rq has lost its P2P mark. */
static bool nrp_head_lost_p2p(struct request *rq)
{
	struct nvme_ns *ns = rq->q->queuedata;

	return (rq->cmd_flags & REQ_NVME_MPATH) && ns &&
	       nvme_ns_head_multipath(ns->head) &&
	       !blk_queue_pci_p2pdma(ns->head->disk->queue);
}

/*
 * Whether multipath request @rq, never started, that would be failed over
 * (a queue that is not live) carries P2P pages its head no longer takes:
 * then it fails instead (BLK_STS_TARGET from queue_rq()).
 */
bool nrp_p2p_failover_refused(struct request *rq)
{
	return nrp_head_lost_p2p(rq) && nrp_rq_has_p2p(rq);
}

/*
 * A P2P request of a multipath namespace failed on our path and would be
 * sent down another one. If the head no longer takes P2P, that other path
 * may be one that cannot map it: fail the request instead, with a status
 * the core completes as BLK_STS_TARGET (-EREMOTEIO), neither retried nor
 * failed over, and say so ourselves (the core would log a status the
 * target never sent).
 */
void nrp_p2p_block_failover(struct request *rq)
{
	u16 status = nvme_req(rq)->status;

	if (!nrp_head_lost_p2p(rq))
		return;
	if (!nvme_is_path_error(status) && !blk_queue_dying(rq->q))
		return;
	nvme_req(rq)->status = NVME_SC_NS_NOT_READY | NVME_STATUS_DNR;
	rq->rq_flags |= RQF_QUIET;
	pr_warn_ratelimited("%s: a P2P request not failed over: the multipath head no longer takes P2P pages\n",
			    rq->q->disk ? rq->q->disk->disk_name : "?");
}

/* Whether any data page of @rq is PCI P2PDMA memory. */
bool nrp_rq_has_p2p(struct request *rq)
{
	struct bio *bio;

	if (!nrp_kernel_has_p2pdma())
		return false;
	__rq_for_each_bio(bio, rq)
		if (nrp_bio_has_p2p(bio))
			return true;
	return false;
}

static void nrp_ns_show_head(struct nvme_ns *ns, void *m)
{
	if (!nrp_ns_has_head(ns) ||
	    !test_bit(NVME_NSHEAD_DISK_LIVE, &ns->head->flags))
		return;
	seq_printf(m, "%s %s path %s p2p %d\n", ns->head->disk->disk_name,
		   dev_name(ns->ctrl->device), ns->disk->disk_name,
		   !!blk_queue_pci_p2pdma(ns->head->disk->queue));
}

/* debugfs "heads": each head of ours, its P2P state and its paths. */
static int nrp_heads_show(struct seq_file *m, void *unused)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_show_head, .data = m };
	struct nrp_ctrl *ctrl;

	mutex_lock(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		nrp_visit_ns(&ctrl->ctrl, &v);
	mutex_unlock(&nrp_mpath_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nrp_heads);

int nrp_mpath_init(struct dentry *debugfs_root)
{
	nrp_mpath_wq = alloc_workqueue("nvme_rdma_p2p_mpath", WQ_UNBOUND, 0);
	if (!nrp_mpath_wq)
		return -ENOMEM;
	INIT_DELAYED_WORK(&nrp_mpath_work, nrp_mpath_work_fn);
	if (debugfs_root) {
		debugfs_create_file("heads", 0444, debugfs_root, NULL,
				    &nrp_heads_fops);
		nrp_fault_file("fault_track_nomem", debugfs_root,
			       &nrp_fault_track_count);
	}
	return 0;
}

/* Module exit, after every controller of ours is freed. */
void nrp_mpath_exit(void)
{
	struct nrp_foreign *f, *tmp;

	/*
	 * Whether or not it went blind since: a registered interface left
	 * behind would call freed module text for the next nvme device.
	 */
	if (nrp_mpath_registered)
		class_interface_unregister(&nrp_nvme_intf);
	cancel_delayed_work_sync(&nrp_mpath_work);
	destroy_workqueue(nrp_mpath_wq);
	list_for_each_entry_safe(f, tmp, &nrp_foreign_ctrls, node) {
		list_del(&f->node);
		kfree(f);
	}
}
