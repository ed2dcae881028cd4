// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: counters and status.
 *
 * Each queue counts into a row of its own (struct nrp_stats in nrp_queue),
 * and the controller's own events into one more. The sums are shown in
 * /sys/kernel/debug/nvme-rdma-p2p/<ctrl>/stats, one "name value" a line,
 * only as consistent as a snapshot of moving counters can be; the rows
 * themselves as a table in queue_stats (tools/nrp-stat reads both).
 * Beside it, "limits" shows how the size of one command was derived, and
 * "remote_invalidate" (Y by default) can be turned off to make every
 * command end with our own LOCAL_INV, as with a target that does not
 * invalidate remotely.
 *
 * The fault_* files inject faults for the tests, see enum nrp_fault;
 * fault_mdts_kb limits the next associations as a smaller MDTS would,
 * fault_queue_size as a target granting a smaller queue (MQES) would, and
 * the module-wide fault_free_delay_ms makes freeing a controller slow, and
 * fault_track_nomem fails the next allocations of the record that tracks
 * a controller of another transport (rdma_p2p_mpath.c).
 *
 * Whether this kernel can do P2PDMA at all is shown read-only in
 * /sys/module/<module>/parameters/p2p.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>

#include "nrp.h"

/* the one file that instantiates the tracepoints of nrp_trace.h */
#define CREATE_TRACE_POINTS
#include "nrp_trace.h"

static const char * const nrp_stat_names[NRP_STAT_COUNT] = {
	[NRP_STAT_COMMANDS]		= "commands",
	[NRP_STAT_INLINE_WRITES]	= "inline_writes",
	[NRP_STAT_INLINE_BYTES]		= "inline_bytes",
	[NRP_STAT_FRWR_REGS]		= "frwr_registrations",
	[NRP_STAT_GLOBAL_RKEY]		= "global_rkey_mappings",
	[NRP_STAT_REMOTE_INV]		= "remote_invalidations",
	[NRP_STAT_BOGUS_INV]		= "bogus_remote_invalidations",
	[NRP_STAT_LOCAL_INV]		= "local_invalidations",
	[NRP_STAT_HOST_BYTES]		= "host_bytes_mapped",
	[NRP_STAT_P2P_BYTES]		= "p2p_bytes_mapped",
	[NRP_STAT_P2P_SEGMENTS]		= "p2p_segments_mapped",
	[NRP_STAT_P2P_UNREACHABLE]	= "p2p_unreachable",
	[NRP_STAT_ERRORS]		= "errors",
	[NRP_STAT_TIMEOUTS]		= "timeouts",
	[NRP_STAT_RECOVERIES]		= "recoveries",
	[NRP_STAT_RECONNECT_ATTEMPTS]	= "reconnect_attempts",
	[NRP_STAT_RECONNECTS]		= "reconnects",
	[NRP_STAT_NOT_READY]		= "not_ready",
	[NRP_STAT_MRS_HELD]		= "mrs_held_back",
	[NRP_STAT_SEND_WAITS]		= "send_completion_waits",
	[NRP_STAT_DEPTH_WAITS]		= "queue_full_requeues",
	[NRP_STAT_SEND_EVENTS]		= "send_cq_events",
};

static const char * const nrp_fault_names[NRP_FAULT_COUNT] = {
	[NRP_FAULT_MAP_LAST]	= "fault_map_last",
	[NRP_FAULT_POST]	= "fault_post",
	[NRP_FAULT_BOGUS_INV]	= "fault_bogus_inv",
	[NRP_FAULT_REAP_DELAY]	= "fault_reap_delay",
	[NRP_FAULT_CM_SILENT]	= "fault_cm_silent",
};

static struct dentry *nrp_debugfs_root;

/* enabled for good by the first fault asked for: tests only */
DEFINE_STATIC_KEY_FALSE(nrp_fault_key);

static u32 nrp_free_delay_ms;

static const char *nrp_p2p_status(void)
{
	if (nrp_kernel_has_p2pdma())
		return "available";
	return "unavailable: kernel built without CONFIG_PCI_P2PDMA";
}

static int nrp_p2p_param_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n", nrp_p2p_status());
}

/* A status, not a knob: refuse "p2p=..." on the command line too. */
static int nrp_p2p_param_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops nrp_p2p_param_ops = {
	.set	= nrp_p2p_param_set,
	.get	= nrp_p2p_param_get,
};

module_param_cb(p2p, &nrp_p2p_param_ops, NULL, 0444);
MODULE_PARM_DESC(p2p, "read-only: whether PCI P2PDMA is available in this kernel");

/* Counter @s of the whole controller: its own row and every queue's. */
static u64 nrp_stat_sum(struct nrp_ctrl *ctrl, enum nrp_stat s)
{
	u64 sum = atomic64_read(&ctrl->stats.v[s]);
	u32 qid;

	for (qid = 0; qid < ctrl->nr_queues_max; qid++)
		sum += atomic64_read(&ctrl->queues[qid].stats.v[s]);
	return sum;
}

static int nrp_stats_show(struct seq_file *m, void *unused)
{
	struct nrp_ctrl *ctrl = m->private;
	int s;

	for (s = 0; s < NRP_STAT_COUNT; s++)
		seq_printf(m, "%s %llu\n", nrp_stat_names[s],
			   nrp_stat_sum(ctrl, s));
	seq_printf(m, "p2p_capable %d\n", READ_ONCE(ctrl->p2p_capable));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nrp_stats);

/* Counted for the controller as a whole, never for one queue. */
static bool nrp_stat_is_ctrl_wide(enum nrp_stat s)
{
	return s == NRP_STAT_RECOVERIES || s == NRP_STAT_RECONNECT_ATTEMPTS ||
	       s == NRP_STAT_RECONNECTS;
}

/* Which blk-mq map a queue serves: see nrp_map_queues() for the order. */
static const char *nrp_queue_type(struct nrp_ctrl *ctrl, u32 qid)
{
	u32 nr_default = ctrl->io_queues[HCTX_TYPE_DEFAULT];
	u32 nr_read = ctrl->io_queues[HCTX_TYPE_READ];

	if (!qid)
		return "admin";
	if (qid <= nr_default)
		return "default";
	if (qid <= nr_default + nr_read)
		return "read";
	return "poll";
}

/*
 * A table: a header line "qid type <counter>...", then one line per queue
 * of the current association. Counters of the whole controller are left
 * out; a queue's counters survive reconnects like the controller's do.
 */
static int nrp_queue_stats_show(struct seq_file *m, void *unused)
{
	struct nrp_ctrl *ctrl = m->private;
	u32 nr = min_t(u32, ctrl->ctrl.queue_count, ctrl->nr_queues_max);
	u32 qid;
	int s;

	seq_puts(m, "qid type");
	for (s = 0; s < NRP_STAT_COUNT; s++)
		if (!nrp_stat_is_ctrl_wide(s))
			seq_printf(m, " %s", nrp_stat_names[s]);
	seq_putc(m, '\n');

	for (qid = 0; qid < nr; qid++) {
		seq_printf(m, "%u %s", qid, nrp_queue_type(ctrl, qid));
		for (s = 0; s < NRP_STAT_COUNT; s++)
			if (!nrp_stat_is_ctrl_wide(s))
				seq_printf(m, " %lld",
					   atomic64_read(&ctrl->queues[qid].stats.v[s]));
		seq_putc(m, '\n');
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nrp_queue_stats);

/*
 * The inputs and the result of the transfer-size derivation of the last
 * association; I/O-queue values are those of the first I/O queue.
 */
static int nrp_limits_show(struct seq_file *m, void *unused)
{
	struct nrp_ctrl *ctrl = m->private;
	u32 io_mr_pages = 0;

	if (ctrl->ctrl.queue_count > 1)
		io_mr_pages = READ_ONCE(ctrl->queues[1].mr_pages);
	seq_printf(m, "fr_page_list_len %u\n", READ_ONCE(ctrl->fr_page_list_len));
	seq_printf(m, "max_mr_pages %u\n", READ_ONCE(ctrl->mr_pages_cap));
	seq_printf(m, "max_fr_pages %u\n", READ_ONCE(ctrl->max_fr_pages));
	seq_printf(m, "max_hw_sectors %u\n", READ_ONCE(ctrl->ctrl.max_hw_sectors));
	seq_printf(m, "admin_mr_pages %u\n", READ_ONCE(ctrl->queues[0].mr_pages));
	seq_printf(m, "io_mr_pages %u\n", io_mr_pages);
	/* commands an I/O queue takes, and the tags that may come to it */
	seq_printf(m, "io_queue_depth %u\n",
		   ctrl->ctrl.queue_count > 1 ? READ_ONCE(ctrl->queues[1].depth) : 0);
	seq_printf(m, "io_queue_tags %u\n",
		   ctrl->ctrl.queue_count > 1 ? READ_ONCE(ctrl->queues[1].tags_max) : 0);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nrp_limits);

static int nrp_fault_get(void *data, u64 *val)
{
	*val = atomic_read(data);
	return 0;
}

static int nrp_fault_set(void *data, u64 val)
{
	if (val > INT_MAX)
		return -EINVAL;
	if (val)
		static_branch_enable(&nrp_fault_key);
	atomic_set(data, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(nrp_fault_fops, nrp_fault_get, nrp_fault_set,
			 "%llu\n");

/* A module-wide fault file @name in @dir: the count of @f still to inject. */
void nrp_fault_file(const char *name, struct dentry *dir, atomic_t *f)
{
	debugfs_create_file_unsafe(name, 0644, dir, f, &nrp_fault_fops);
}

/*
 * Called where a controller's memory is about to be freed: a slow free
 * makes the window between a controller leaving the list and its last
 * instruction wide enough for module exit to race with it.
 */
void nrp_fault_free_delay(void)
{
	u32 ms = READ_ONCE(nrp_free_delay_ms);
	unsigned long end;

	if (!ms)
		return;
	pr_info("fault: freeing a controller in %u ms\n", ms);
	/*
	 * Writing 0 to the file ends the delay early, so a test can hold
	 * the free for as long as a slow kernel needs to show that
	 * something did not wait for it, and no longer. The closing line
	 * tells when the free went on.
	 */
	end = jiffies + msecs_to_jiffies(ms);
	while (READ_ONCE(nrp_free_delay_ms) && time_before(jiffies, end))
		msleep(20);
	pr_info("fault: free delay over, freeing the controller\n");
}

/*
 * debugfs is a debugging aid: failures are logged by debugfs itself and
 * never fail a controller.
 */
void nrp_stats_register(struct nrp_ctrl *ctrl)
{
	struct dentry *dir;
	int f;

	if (IS_ERR_OR_NULL(nrp_debugfs_root))
		return;

	dir = debugfs_create_dir(dev_name(ctrl->ctrl.device),
				 nrp_debugfs_root);
	if (IS_ERR(dir))
		return;
	debugfs_create_file("stats", 0444, dir, ctrl, &nrp_stats_fops);
	debugfs_create_file("queue_stats", 0444, dir, ctrl,
			    &nrp_queue_stats_fops);
	debugfs_create_file("limits", 0444, dir, ctrl, &nrp_limits_fops);
	debugfs_create_bool("remote_invalidate", 0644, dir, &ctrl->remote_inv);
	debugfs_create_u32("fault_mdts_kb", 0644, dir, &ctrl->fault_mdts_kb);
	debugfs_create_u32("fault_queue_size", 0644, dir,
			   &ctrl->fault_queue_size);
	for (f = 0; f < NRP_FAULT_COUNT; f++)
		debugfs_create_file_unsafe(nrp_fault_names[f], 0644, dir,
					   &ctrl->faults[f], &nrp_fault_fops);
	ctrl->debugfs_dir = dir;
}

/*
 * Waits for readers inside ->show(); files still open afterwards only get
 * errors, so the controller may be freed right after.
 */
void nrp_stats_unregister(struct nrp_ctrl *ctrl)
{
	debugfs_remove_recursive(ctrl->debugfs_dir);
	ctrl->debugfs_dir = NULL;
}

/* Returns the module's debugfs directory, NULL if there is none. */
struct dentry *nrp_stats_init(void)
{
	nrp_debugfs_root = debugfs_create_dir("nvme-rdma-p2p", NULL);
	if (IS_ERR(nrp_debugfs_root))
		nrp_debugfs_root = NULL;
	else
		debugfs_create_u32("fault_free_delay_ms", 0644,
				   nrp_debugfs_root, &nrp_free_delay_ms);

	pr_info("P2PDMA %s\n", nrp_p2p_status());
	return nrp_debugfs_root;
}

void nrp_stats_exit(void)
{
	debugfs_remove_recursive(nrp_debugfs_root);
	nrp_debugfs_root = NULL;
}
