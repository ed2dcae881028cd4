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
 * Two class interfaces watch what comes. On the nvme class, each
 * controller as the core adds its device, before it connects, identifies
 * and scans namespaces: one of another transport (or PCIe) takes the mark
 * from every head until the core knows its subsystem from Identify (the
 * NQN a fabrics controller connected to is no evidence of it), then from
 * that subsystem's heads; ours decide in their set-up, before going live.
 * On the block class, each path disk as the core adds it, which it does
 * before the path can be chosen for I/O: a path that cannot carry P2P
 * unmarks its head there and then, and what P2P I/O waits in the head for
 * a path fails (BLK_STS_TARGET, -EREMOTEIO to the submitter); one of ours
 * has its head decided once its scan is done, also for a namespace added
 * later. A P2P request of ours that would fail over to a head with such a
 * path fails instead (nrp_p2p_block_failover()). See
 * Documentation/design.rst for the windows that remain.
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

/*
 * Serialises decisions and their application to the heads, and is held
 * across a walk of our controllers' namespaces. The lists and flags below
 * change under it and nrp_mark_lock both: either keeps them still.
 */
static DEFINE_MUTEX(nrp_mpath_lock);
/*
 * Orders a head's mark against a path disk that joins or leaves it, and
 * keeps the facts a mark rests on still. The block class's callbacks take
 * it under that class's mutex, so it is taken inside a walk of a
 * controller's namespaces, never held across one (as nrp_mpath_lock is).
 * On Linux 6.1 the walk takes the core's namespaces_rwsem for reading: the
 * ANA work holds that while it adds a head's disk, which takes the block
 * class's mutex, and a namespace scan waiting to write it holds back new
 * readers. A callback waiting for a walk would close the circle.
 */
static DEFINE_MUTEX(nrp_mark_lock);
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
/*
 * The interface on the block class (nrp_block_intf) is registered: from
 * the first namespace of ours on (the block class is not exported either,
 * its disks tell it), and before any head is marked. nrp_path_fops are the
 * core's operations of a path disk, as that namespace's disk has them.
 */
static bool nrp_block_registered;
static const struct block_device_operations *nrp_path_fops;
/* module exit began: no interface is registered any more */
static bool nrp_mpath_exiting;
/* rounds of the poll for controllers whose subsystem is unknown */
static unsigned int nrp_unknown_polls;
/*
 * Re-decides every subsystem: after a scan of ours added a path, after a
 * foreign controller or path went or a controller told its subsystem.
 * Polls while a foreign controller's subsystem is unknown.
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

/* The facts a mark rests on stay still: either lock of ours is held. */
static void nrp_assert_facts_still(void)
{
	lockdep_assert(lockdep_is_held(&nrp_mpath_lock) ||
		       lockdep_is_held(&nrp_mark_lock));
}

/* Sets one of the flags a mark rests on: under both locks, in their order. */
static void nrp_mpath_set_fact(bool *fact)
{
	mutex_lock(&nrp_mpath_lock);
	mutex_lock(&nrp_mark_lock);
	*fact = true;
	mutex_unlock(&nrp_mark_lock);
	mutex_unlock(&nrp_mpath_lock);
}

/* Whether heads of subsystem @subnqn may take P2P pages. */
static bool nrp_subsys_p2p_ok(const char *subnqn)
{
	struct nrp_foreign *f;
	struct nrp_ctrl *ctrl;
	const char *nqn;

	nrp_assert_facts_still();
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

/* Whether path @ns can carry P2P pages: ours, on a device that can. */
static bool nrp_path_carries_p2p(struct nvme_ns *ns)
{
	return nrp_is_our_ctrl(ns->ctrl) &&
	       READ_ONCE(to_nrp_ctrl(ns->ctrl)->p2p_capable);
}

/*
 * Whether a path on @head's own list gives @test the answer @want: under
 * the head's SRCU, as the core's path selection reads the list. A new path
 * is on it before its disk is added.
 */
static bool nrp_head_any_path(struct nvme_ns_head *head,
			      bool (*test)(struct nvme_ns *ns), bool want)
{
	struct nvme_ns *ns;
	bool found = false;
	int idx;

	idx = srcu_read_lock(&head->srcu);
	list_for_each_entry_srcu(ns, &head->list, siblings,
				 srcu_read_lock_held(&head->srcu)) {
		if (test(ns) == want) {
			found = true;
			break;
		}
	}
	srcu_read_unlock(&head->srcu, idx);
	return found;
}

/* Whether the core may send a bio of @head down a path that cannot carry P2P. */
static bool nrp_head_has_gap(struct nvme_ns_head *head)
{
	return nrp_head_any_path(head, nrp_path_carries_p2p, false);
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
 * came, or their path failed) must not be sent down a path of it that
 * cannot carry them: they fail, the rest stay. The list is taken under the
 * head's lock and sorted without it. (Not waiting for the head's requeue
 * work, which may hold bios it took off the list just before: a flush
 * here, under the block class's lock in the middle of the new path's disk
 * add, could wait for I/O that waits for that lock.) The work may also
 * have run while we held the list, found it empty and gone: what stays is
 * handed to it again, or it would wait for the next kick (a reconnect, an
 * ANA change). Bios that still find no usable path go back on the list
 * without a kick, so that cannot loop.
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
	if (!bio_list_empty(&keep)) {
		spin_lock_irq(&head->requeue_lock);
		bio_list_merge_head(&head->requeue_list, &keep);
		spin_unlock_irq(&head->requeue_lock);
		kblockd_schedule_work(&head->requeue_work);
	}
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

static void nrp_head_set_p2p_why(struct nvme_ns_head *head, bool on,
				 const char *why)
{
	struct request_queue *q = head->disk->queue;

	lockdep_assert_held(&nrp_mark_lock);
	if (!!blk_queue_pci_p2pdma(q) == on)
		return;
	nrp_queue_set_p2pdma(q, on);
	pr_info("%s: PCI P2PDMA %s: %s\n", head->disk->disk_name,
		on ? "on" : "off", why);
}

static void nrp_head_set_p2p(struct nvme_ns_head *head, bool on)
{
	nrp_head_set_p2p_why(head, on, on ? "every path can carry it" :
			     "a controller of its subsystem, or of one not known yet, cannot carry it");
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

/*
 * Decide for the head of @ns, given whether its subsystem may take P2P
 * (@ok): marked only if no path of it cannot carry P2P either, and only
 * once the block class is watched; a path that cannot carry P2P also
 * fails the P2P bios waiting in it.
 */
static void nrp_ns_head_decide(struct nvme_ns *ns, void *ok)
{
	bool gap;

	if (!nrp_ns_has_head(ns))
		return;
	/* a path that joins after this look unmarks in its disk's add */
	mutex_lock(&nrp_mark_lock);
	gap = nrp_head_has_gap(ns->head);
	nrp_head_set_p2p(ns->head, *(bool *)ok && !gap && nrp_block_registered);
	if (gap)
		nrp_head_fail_p2p_waiting(ns->head);
	mutex_unlock(&nrp_mark_lock);
}

static void nrp_ns_head_unmark(struct nvme_ns *ns, void *unused)
{
	if (!nrp_ns_has_head(ns))
		return;
	mutex_lock(&nrp_mark_lock);
	nrp_head_set_p2p(ns->head, false);
	mutex_unlock(&nrp_mark_lock);
}

/*
 * Take the mark from the heads of @ctrl's namespaces: new P2P submitters
 * refuse them; what is on its way already goes on (see nrp_ns_head_decide()).
 */
static void nrp_ctrl_heads_unmark(struct nrp_ctrl *ctrl)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_head_unmark };

	nrp_visit_ns(&ctrl->ctrl, &v);
}

/* Decide for the subsystem of @ctrl and apply it to its heads. */
static void nrp_mpath_apply(struct nrp_ctrl *ctrl)
{
	const char *nqn = nrp_ctrl_subnqn(&ctrl->ctrl);
	struct nrp_ns_visit v = { .fn = nrp_ns_head_decide };
	bool ok;

	lockdep_assert_held(&nrp_mpath_lock);
	if (!nqn || nrp_ctrl_is_discovery(&ctrl->ctrl))
		return;
	ok = nrp_subsys_p2p_ok(nqn);
	v.data = &ok;
	nrp_visit_ns(&ctrl->ctrl, &v);
}

/* Decide for every subsystem of ours. */
static void nrp_mpath_apply_all(void)
{
	struct nrp_ctrl *ctrl;

	lockdep_assert_held(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		nrp_mpath_apply(ctrl);
}

/*
 * A foreign controller of @nqn (NULL: not known yet) arrived: unmark now,
 * a whole connect before a path of it can take I/O.
 */
static void nrp_mpath_withdraw(const char *nqn)
{
	struct nrp_ctrl *ctrl;
	const char *ours;

	lockdep_assert_held(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node) {
		ours = nrp_ctrl_subnqn(&ctrl->ctrl);
		if (!nqn || (ours && !strcmp(ours, nqn)))
			nrp_ctrl_heads_unmark(ctrl);
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

/*
 * The path of a multipath head whose disk is block device @dev, else NULL
 * (a partition, a head's disk, any other disk). A path disk has the core's
 * operations and its namespace as private data from its allocation on.
 */
static struct nvme_ns *nrp_path_of(struct device *dev)
{
	const struct block_device_operations *fops = READ_ONCE(nrp_path_fops);
	struct block_device *bdev = dev_to_bdev(dev);
	struct nvme_ns *ns;

	if (!fops || bdev_is_partition(bdev) || bdev->bd_disk->fops != fops)
		return NULL;
	ns = bdev->bd_disk->private_data;
	return ns && nvme_ns_head_multipath(ns->head) ? ns : NULL;
}

/*
 * Whether @head is one we decide for: its subsystem has a controller of
 * ours. A head whose paths are all of other transports keeps what the
 * core decided for it (from 7.2 the core marks a head whose paths all take
 * P2PDMA pages: an nvme-pci SSD's, with multipath_always_on).
 */
static bool nrp_head_is_ours(struct nvme_ns_head *head)
{
	struct nrp_ctrl *ctrl;

	nrp_assert_facts_still();
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		if (READ_ONCE(ctrl->ctrl.subsys) == head->subsys)
			return true;
	return false;
}

static bool nrp_path_is_ours(struct nvme_ns *ns)
{
	return nrp_is_our_ctrl(ns->ctrl);
}

/* Whether a path of ours is on @head's list. */
static bool nrp_head_has_ours(struct nvme_ns_head *head)
{
	return nrp_head_any_path(head, nrp_path_is_ours, true);
}

/*
 * The class interface's callbacks on the block class: a disk was added or
 * is being removed. The core adds a path's disk after the path is on its
 * head's list and before it makes the path usable (nvme_mpath_add_disk()
 * gives it the ANA state that path selection needs), synchronously: here
 * a path that cannot carry P2P unmarks its head and fails what P2P I/O
 * waits in it before the core can route to it. A path of ours makes the
 * head (perhaps new: a namespace added after connect) decided once its
 * scan is done.
 */
static int nrp_block_dev_add(NRP_CLASS_INTF_PARAMS)
{
	struct nvme_ns *ns = nrp_path_of(dev);

	if (!ns)
		return 0;
	if (nrp_path_carries_p2p(ns)) {
		/*
		 * From 7.2 the core makes a head with the P2PDMA feature set
		 * and keeps it while its paths have it: a new head of ours is
		 * marked before we decided. Take that now where our rule says
		 * no; only the decision after the scan marks.
		 */
		const char *nqn = nrp_ctrl_subnqn(ns->ctrl);

		mutex_lock(&nrp_mark_lock);
		if (!nqn || !nrp_subsys_p2p_ok(nqn) ||
		    nrp_head_has_gap(ns->head))
			nrp_head_set_p2p(ns->head, false);
		mutex_unlock(&nrp_mark_lock);
		nrp_mpath_refresh();
		return 0;
	}
	/*
	 * A path the block layer gives no P2P pages must not be sent what
	 * P2P I/O waits in any head. One that takes them (nvme-pci; in-tree
	 * nvme_rdma from 7.1) is held unable only on a head of ours, where
	 * our rule decides: on another the core's mark stands. P2P I/O that
	 * waits in an unmarked head came under a mark of ours that our last
	 * path took with it (nrp_block_dev_remove()): it fails too, as it
	 * would have on ours, rather than reach a driver that may retry a
	 * mapping it cannot make for ever (7.3's nvme_rdma over an HCA
	 * without peer DMA).
	 */
	mutex_lock(&nrp_mark_lock);
	if (!blk_queue_pci_p2pdma(ns->disk->queue) ||
	    nrp_head_is_ours(ns->head)) {
		nrp_head_set_p2p(ns->head, false);
		nrp_head_fail_p2p_waiting(ns->head);
	} else if (!blk_queue_pci_p2pdma(ns->head->disk->queue)) {
		nrp_head_fail_p2p_waiting(ns->head);
	}
	mutex_unlock(&nrp_mark_lock);
	return 0;
}

/*
 * The path already left its head's list (nvme_ns_remove()): decide again.
 * A head our last path left may stay (7.x: delayed_removal_secs), marked
 * by us and waiting for a path; no decision of ours visits it any more,
 * so the mark goes with that path: new P2P I/O is refused there, and what
 * waits fails when a path joins (nrp_block_dev_add()). A path of ours
 * that leaves a head with a path that cannot carry P2P (our controller
 * deleted: ctrl_loss_tmo, a disconnect) fails the P2P I/O waiting there,
 * as each of its failed attempts did (nrp_mpath_ctrl_down()): after it,
 * nothing of ours looks at that head again.
 */
static void nrp_block_dev_remove(NRP_CLASS_INTF_PARAMS)
{
	struct nvme_ns *ns = nrp_path_of(dev);

	if (!ns)
		return;
	if (nrp_is_our_ctrl(ns->ctrl)) {
		mutex_lock(&nrp_mark_lock);
		if (!nrp_head_has_ours(ns->head))
			nrp_head_set_p2p_why(ns->head, false,
					     "no path of ours left in it");
		if (nrp_head_has_gap(ns->head))
			nrp_head_fail_p2p_waiting(ns->head);
		mutex_unlock(&nrp_mark_lock);
	}
	nrp_mpath_refresh();
}

static struct class_interface nrp_block_intf = {
	.add_dev	= nrp_block_dev_add,
	.remove_dev	= nrp_block_dev_remove,
};

/* The block class and the operations of a path disk, from @ns's disk. */
static void nrp_ns_find_disk_class(struct nvme_ns *ns, void *unused)
{
	if (nrp_block_intf.class || !nrp_ns_has_head(ns))
		return;
	WRITE_ONCE(nrp_path_fops, ns->disk->fops);
	nrp_block_intf.class = disk_to_dev(ns->disk)->class;
}

/*
 * Watch the block class from the first namespace of ours under a head on,
 * before any head is marked (nrp_ns_head_decide()): registering reports
 * every disk there is, so a path of another transport that joined a head
 * of ours before is seen too. Once: a failure leaves every head unmarked.
 */
static void nrp_mpath_watch_disks(void)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_find_disk_class };
	struct nrp_ctrl *ctrl;
	bool reg;

	/* nothing to mark, nothing P2P to fail */
	if (!nrp_kernel_has_p2pdma())
		return;
	mutex_lock(&nrp_mpath_lock);
	reg = !nrp_block_intf.class && !nrp_mpath_exiting;
	if (reg)
		list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
			nrp_visit_ns(&ctrl->ctrl, &v);
	reg = reg && nrp_block_intf.class;
	mutex_unlock(&nrp_mpath_lock);
	if (!reg)
		return;
	/* (outside our locks: add_dev takes one under the class's mutex) */
	if (class_interface_register(&nrp_block_intf)) {
		pr_err("cannot watch the block class: no PCI P2PDMA on multipath heads\n");
		nrp_mpath_set_fact(&nrp_mpath_blind);
		return;
	}
	nrp_mpath_set_fact(&nrp_block_registered);
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
	nrp_mpath_watch_disks();

	mutex_lock(&nrp_mpath_lock);
	nrp_mpath_apply_all();
	/*
	 * Every 50 ms for a second, then every second: a controller tells
	 * its subsystem when it identifies (a PCIe one within milliseconds,
	 * a fabrics one after its admin queue's connect); one that never
	 * does (a dead device) keeps every head unmarked, and says so once.
	 * What waits in a head is not failed meanwhile: that happens only
	 * when a path that cannot carry P2P joins it (nrp_block_dev_add()).
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
	mutex_lock(&nrp_mark_lock);
	if (f) {
		f->ctrl = nctrl;
		list_add(&f->node, &nrp_foreign_ctrls);
	} else {
		/* it cannot be remembered: no head is marked from now on */
		pr_err("no memory to track a controller of another transport: no PCI P2PDMA on multipath heads\n");
		nrp_mpath_blind = true;
		nqn = NULL;
	}
	mutex_unlock(&nrp_mark_lock);
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
	mutex_lock(&nrp_mark_lock);
	list_for_each_entry(f, &nrp_foreign_ctrls, node) {
		if (f->ctrl == nctrl) {
			list_del(&f->node);
			kfree(f);
			/* its paths are gone: P2P may come back */
			nrp_mpath_refresh();
			break;
		}
	}
	mutex_unlock(&nrp_mark_lock);
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
	mutex_lock(&nrp_mark_lock);
	list_add(&ctrl->mpath_node, &nrp_mpath_ctrls);
	mutex_unlock(&nrp_mark_lock);
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
		nrp_mpath_set_fact(&nrp_mpath_blind);
		/* registered or not, the interface is never registered again */
		return;
	}
	/* only module exit reads it, after every controller of ours is gone */
	nrp_mpath_registered = true;
}

/*
 * A path's own queue says whether it takes P2P pages: the core sets that
 * once, when it allocates the namespace, from what we answered then. A new
 * association may answer otherwise (another RDMA device behind the same
 * address, allow_soft_p2p changed), so every path of ours follows
 * p2p_capable again. Two readers need it right: a P2P submitter on the
 * path's own disk, and, from 7.2 on, the core itself, which stacks each
 * path's limits into the head at every revalidation and clears the head's
 * P2PDMA feature for a path without it. A stale path bit would let the
 * core take a mark we had just given.
 */
static void nrp_ns_path_follow(struct nvme_ns *ns, void *capable)
{
	if (!!blk_queue_pci_p2pdma(ns->queue) != *(bool *)capable)
		nrp_queue_set_p2pdma(ns->queue, *(bool *)capable);
}

/*
 * After the I/O queues of a new association run again, before it goes
 * live. Not earlier and not under nrp_mpath_lock: from 6.11 changing the
 * bit takes the path queue's limits_lock, whose holder may be waiting for
 * that queue to freeze (a sysfs limits write, the core's revalidation),
 * which waits for the requests that a reset holds on the quiesced queues.
 * The heads were decided when the admin queue came up; this is followed by
 * a refresh (nrp_setup_ctrl()), which decides them again.
 */
void nrp_mpath_paths_follow(struct nrp_ctrl *ctrl)
{
	bool capable = READ_ONCE(ctrl->p2p_capable);
	struct nrp_ns_visit v = { .fn = nrp_ns_path_follow, .data = &capable };

	nrp_visit_ns(&ctrl->ctrl, &v);
}

/*
 * @ctrl has decided whether it can carry P2P (a new association): before
 * it goes live, so before any path of it can take I/O.
 */
void nrp_mpath_ctrl_decided(struct nrp_ctrl *ctrl)
{
	mutex_lock(&nrp_mpath_lock);
	mutex_lock(&nrp_mark_lock);
	ctrl->p2p_decided = true;
	mutex_unlock(&nrp_mark_lock);
	nrp_mpath_apply(ctrl);
	mutex_unlock(&nrp_mpath_lock);
}

/*
 * Fail the P2P bios waiting in the head of @ns when a path of it cannot
 * carry them (see nrp_mpath_ctrl_down()).
 */
static void nrp_ns_head_fail_waiting(struct nvme_ns *ns, void *unused)
{
	if (!nrp_ns_has_head(ns))
		return;
	mutex_lock(&nrp_mark_lock);
	if (nrp_head_has_gap(ns->head))
		nrp_head_fail_p2p_waiting(ns->head);
	mutex_unlock(&nrp_mark_lock);
}

/*
 * @ctrl is down and about to try again (or give up): after its recovery
 * tore the association down, and after each failed attempt. A P2P bio
 * submitted to one of its heads while no path was usable waits in the
 * head; if a path there cannot carry it (another transport's, in an ANA
 * state the core does not route to), it would go down that path as soon
 * as the path became usable. The requests that were in flight on ours
 * failed instead of failing over (nrp_p2p_block_failover()), and so do
 * these: a submitter that checked the head's mark once and went on
 * submitting as our path failed gets -EREMOTEIO at our next failed
 * attempt (a reconnect delay and an attempt's connect), not when our path
 * comes back or ctrl_loss_tmo runs out. Also when another controller of
 * ours, down too, would have carried them: with such a path in the head,
 * P2P I/O does not wait for a path. A path that joins fails what waits
 * then (nrp_block_dev_add()), our path leaving does too
 * (nrp_block_dev_remove()); this is for what came in between. What is
 * left: a bio that arrives after our last look, before the other path
 * becomes usable (Documentation/design.rst).
 */
void nrp_mpath_ctrl_down(struct nrp_ctrl *ctrl)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_head_fail_waiting };

	if (!nrp_kernel_has_p2pdma())
		return;
	nrp_visit_ns(&ctrl->ctrl, &v);
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
	mutex_lock(&nrp_mark_lock);
	listed = !list_empty(&ctrl->mpath_node);
	if (listed)
		list_del_init(&ctrl->mpath_node);
	mutex_unlock(&nrp_mark_lock);
	mutex_unlock(&nrp_mpath_lock);
	if (listed)
		nrp_mpath_refresh();
}

/*
 * Whether the head of multipath request @rq has a path that cannot carry
 * P2P pages, which a failover could choose. A head that is merely unmarked
 * (another controller of its subsystem, or of one not known yet, is still
 * connecting) has none: the request waits in the head like any other, and
 * fails there if such a path joins before ours comes back.
 */
static bool nrp_rq_head_has_gap(struct request *rq)
{
	struct nvme_ns *ns = rq->q->queuedata;

	return (rq->cmd_flags & REQ_NVME_MPATH) && ns &&
	       nvme_ns_head_multipath(ns->head) && nrp_head_has_gap(ns->head);
}

/*
 * Whether multipath request @rq, never started, that would be failed over
 * (a queue that is not live) carries P2P pages that another path of its
 * head cannot carry: then it fails instead (BLK_STS_TARGET from queue_rq()).
 */
bool nrp_p2p_failover_refused(struct request *rq)
{
	return nrp_rq_has_p2p(rq) && nrp_rq_head_has_gap(rq);
}

/*
 * A P2P request of a multipath namespace failed on our path and would be
 * sent down another one. If the head has a path that cannot map it, fail
 * the request instead, with a status the core completes as BLK_STS_TARGET
 * (-EREMOTEIO), neither retried nor failed over, and say so ourselves (the
 * core would log a status the target never sent).
 */
void nrp_p2p_block_failover(struct request *rq)
{
	u16 status = nvme_req(rq)->status;

	if (!nrp_rq_head_has_gap(rq))
		return;
	if (!nvme_is_path_error(status) && !blk_queue_dying(rq->q))
		return;
	nvme_req(rq)->status = NVME_SC_NS_NOT_READY | NVME_STATUS_DNR;
	rq->rq_flags |= RQF_QUIET;
	pr_warn_ratelimited("%s: a P2P request not failed over: a path of its multipath head cannot carry P2P pages\n",
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

/*
 * debugfs fault_requeue_hold, for the tests: writing 1 takes what waits in
 * every head with a path of ours off the head's list, as the core's
 * requeue work (nvme_requeue_work()) takes it before it submits it again;
 * writing 0 submits it again, as that work does. A requeue round held
 * across another controller's arrival. The heads must stay while held
 * (the bios keep no reference on them), which the tests see to.
 */
static DEFINE_SPINLOCK(nrp_held_lock);
static struct bio_list nrp_held = BIO_EMPTY_LIST;
static unsigned int nrp_held_count;

static void nrp_ns_hold_waiting(struct nvme_ns *ns, void *unused)
{
	struct nvme_ns_head *head = ns->head;
	struct bio *bio, *all;

	if (!nrp_ns_has_head(ns))
		return;
	spin_lock_irq(&head->requeue_lock);
	all = bio_list_get(&head->requeue_list);
	spin_unlock_irq(&head->requeue_lock);
	spin_lock_irq(&nrp_held_lock);
	while ((bio = all)) {
		all = bio->bi_next;
		bio->bi_next = NULL;
		bio_list_add(&nrp_held, bio);
		nrp_held_count++;
	}
	spin_unlock_irq(&nrp_held_lock);
}

/* Submit what is held again, or (@fail, module exit) fail it. */
static void nrp_release_held(bool fail)
{
	struct bio *bio, *all;

	spin_lock_irq(&nrp_held_lock);
	all = bio_list_get(&nrp_held);
	nrp_held_count = 0;
	spin_unlock_irq(&nrp_held_lock);
	while ((bio = all)) {
		all = bio->bi_next;
		bio->bi_next = NULL;
		if (fail)
			bio_io_error(bio);
		else
			submit_bio_noacct(bio);
	}
}

static int nrp_requeue_hold_get(void *data, u64 *val)
{
	spin_lock_irq(&nrp_held_lock);
	*val = nrp_held_count;
	spin_unlock_irq(&nrp_held_lock);
	return 0;
}

static int nrp_requeue_hold_set(void *data, u64 val)
{
	struct nrp_ns_visit v = { .fn = nrp_ns_hold_waiting };
	struct nrp_ctrl *ctrl;

	if (val > 1)
		return -EINVAL;
	if (!val) {
		nrp_release_held(false);
		return 0;
	}
	mutex_lock(&nrp_mpath_lock);
	list_for_each_entry(ctrl, &nrp_mpath_ctrls, mpath_node)
		nrp_visit_ns(&ctrl->ctrl, &v);
	mutex_unlock(&nrp_mpath_lock);
	pr_info("fault: %u bios waiting in heads held, as a requeue round holds them\n",
		nrp_held_count);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(nrp_requeue_hold_fops, nrp_requeue_hold_get,
			 nrp_requeue_hold_set, "%llu\n");

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
		debugfs_create_file_unsafe("fault_requeue_hold", 0644,
					   debugfs_root, NULL,
					   &nrp_requeue_hold_fops);
	}
	return 0;
}

/* Module exit, after every controller of ours is freed. */
void nrp_mpath_exit(void)
{
	struct nrp_foreign *f, *tmp;

	mutex_lock(&nrp_mpath_lock);
	nrp_mpath_exiting = true;
	mutex_unlock(&nrp_mpath_lock);
	cancel_delayed_work_sync(&nrp_mpath_work);
	/*
	 * Whether or not it went blind since: a registered interface left
	 * behind would call freed module text for the next device.
	 */
	if (nrp_mpath_registered)
		class_interface_unregister(&nrp_nvme_intf);
	if (nrp_block_registered)
		class_interface_unregister(&nrp_block_intf);
	/* (their remove_dev may have queued a round) */
	cancel_delayed_work_sync(&nrp_mpath_work);
	destroy_workqueue(nrp_mpath_wq);
	/* (a test that held bios and never let them go: they fail) */
	nrp_release_held(true);
	list_for_each_entry_safe(f, tmp, &nrp_foreign_ctrls, node) {
		list_del(&f->node);
		kfree(f);
	}
}
