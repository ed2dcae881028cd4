/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvme-rdma-p2p: types and entry points shared by the files of the module.
 *
 * Object model, outermost first:
 *
 *   nrp_ctrl      one NVMe-oF controller (association); embeds nvme_ctrl
 *   nrp_queue     one NVMe queue pair carried by one RC QP and one rdma_cm id
 *   nrp_request   blk-mq PDU of one command; embeds nvme_request first
 *   nrp_device    one ib_device in use, refcounted by the queues on it,
 *                 owning the protection domain they share
 */
#ifndef NRP_H
#define NRP_H

#include <linux/blk-mq.h>
#include <linux/completion.h>
#include <linux/irq_poll.h>
#include <linux/jump_label.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "nvme.h"
#include "fabrics.h"
#include "nrp_compat.h"

/* Address and route resolution timeout handed to the rdma_cm. */
#define NRP_CM_RESOLVE_TIMEOUT_MS	3000

/*
 * Upper bound for one whole rdma_cm connect sequence (resolve address,
 * resolve route, CM handshake). The CM gives up on its own well before
 * this; the bound only guarantees that a reconnect worker cannot sleep
 * forever if an event never arrives.
 */
#define NRP_CM_CONNECT_TIMEOUT_MS	60000

/*
 * The size of one command is set by the device's fast-register page-list
 * length, the target's MDTS and the module's max_mr_pages, which bounds
 * the page list every MR of a pool keeps (one MR per queue slot, rebuilt
 * at every association). Its default is that of the in-tree nvme_rdma:
 * 256 entries, a 2 KiB list of 64-bit addresses that providers fit in one
 * page. The parameter may go up to this ceiling: 2048 pages of 4 KiB are
 * 8 MiB, half of what the 24-bit length of a keyed SGL can carry.
 */
#define NRP_MR_PAGES_DEFAULT		256
#define NRP_FR_PAGES_CEILING		2048

/* 512-byte sectors to 4 KiB pages (the NVMe controller and MR page size) */
#define NRP_SECTORS_PER_PAGE_SHIFT	(ilog2(SZ_4K) - SECTOR_SHIFT)

/* Data SGEs that may ride along with the command capsule in one SEND. */
#define NRP_MAX_INLINE_SGES		4

/*
 * Send completions send_iop reaps in one round; more come in its next
 * round, which irq_poll runs after other softirq work, as ib_core does
 * for its own softirq CQs.
 */
#define NRP_SEND_POLL_BUDGET		64

/*
 * How late fault_reap_delay makes a send-reaper round start, and, once it
 * has given irq_poll back, arm the send CQ.
 */
#define NRP_FAULT_REAP_DELAY_MS		20

/* Send queue slots one command may occupy: REG_MR, SEND, LOCAL_INV. */
#define NRP_SQ_SLOTS_PER_CMD		3

/* The scatterlist entries stored right behind each nrp_request. */
#define NRP_FIRST_SGL_BYTES \
	(sizeof(struct scatterlist) * NVME_INLINE_SG_CNT)

struct nrp_ctrl;

/* An ib_device our ib_client is removing; see nrp_device_mark_dying(). */
struct nrp_dying {
	struct ib_device	*ibdev;
	struct list_head	node;
};

struct nrp_device {
	struct ib_device	*ibdev;
	struct ib_pd		*pd;
	struct kref		ref;
	struct list_head	node;		/* on the module's device list */
	u32			inline_sges;	/* data SGEs allowed per SEND */
};

/* A DMA-mapped buffer that one work request points at. */
struct nrp_qe {
	struct ib_cqe		cqe;
	void			*buf;
	u64			dma;
};

/* How the data of a request was DMA-mapped, so it is unmapped the same way. */
enum nrp_dma_kind {
	NRP_DMA_NONE = 0,
	NRP_DMA_HOST,
	NRP_DMA_P2P,
};

struct nrp_request {
	struct nvme_request	req;		/* must stay first: nvme_req() */
	struct nrp_queue	*queue;
	struct nrp_qe		sqe;		/* the command capsule */
	struct ib_mr		*mr;		/* FRWR registration, if any */
	/*
	 * Completion events still owed before the request may complete: the
	 * SEND completion and the response (whose reference moves on to
	 * the LOCAL_INV completion when the rkey must be invalidated here).
	 */
	refcount_t		pending;
	/*
	 * The target's response for this use of the request arrived (or
	 * the request was never started): any further one for the same
	 * command id is the target's error, not a completion.
	 */
	bool			answered;
	/* counted in queue->inflight (a queue granted less than tags_max) */
	bool			counted;
	/* its WRs went to ib_post_send(); kept only under fault injection */
	bool			posted;
	__le16			status;
	union nvme_result	result;
	u8			dma_kind;	/* enum nrp_dma_kind */
	int			nents;		/* entries filled by blk_rq_map_sg */
	u32			num_sge;
	struct ib_sge		sge[1 + NRP_MAX_INLINE_SGES];
	struct ib_send_wr	send_wr;
	struct ib_reg_wr	reg_wr;
	struct ib_cqe		reg_cqe;
	struct ib_cqe		inv_cqe;
	struct sg_table		sgt;
	struct scatterlist	first_sgl[];	/* NVME_INLINE_SG_CNT entries */
};

enum nrp_stat {
	NRP_STAT_COMMANDS,
	NRP_STAT_INLINE_WRITES,
	NRP_STAT_INLINE_BYTES,
	NRP_STAT_FRWR_REGS,
	NRP_STAT_GLOBAL_RKEY,
	NRP_STAT_REMOTE_INV,
	NRP_STAT_BOGUS_INV,
	NRP_STAT_LOCAL_INV,
	NRP_STAT_HOST_BYTES,
	NRP_STAT_P2P_BYTES,
	NRP_STAT_P2P_SEGMENTS,
	NRP_STAT_P2P_UNREACHABLE,
	NRP_STAT_ERRORS,
	NRP_STAT_TIMEOUTS,
	NRP_STAT_RECOVERIES,
	NRP_STAT_RECONNECT_ATTEMPTS,
	NRP_STAT_RECONNECTS,
	NRP_STAT_NOT_READY,
	NRP_STAT_MRS_HELD,
	NRP_STAT_SEND_WAITS,
	NRP_STAT_DEPTH_WAITS,
	NRP_STAT_SEND_EVENTS,
	NRP_STAT_COUNT
};

/*
 * The counters of one queue, or of the controller as a whole. Atomic, not
 * per CPU: a controller may have a queue per CPU on a host of hundreds of
 * CPUs, and a row per queue per CPU grows with the square of the CPUs
 * (see nrp_ctrl.queues). Each queue counts into its own row, which only
 * the CPUs mapped to that queue touch, so the cache lines are rarely
 * shared, and an atomic add is one instruction as this_cpu_add() was.
 */
struct nrp_stats {
	atomic64_t		v[NRP_STAT_COUNT];
};

enum nrp_queue_flags {
	NRP_Q_IB_READY,		/* CQ, QP, MR pool and receive ring exist */
	NRP_Q_CONNECTED,	/* RDMA connection up and not yet drained */
	NRP_Q_ALLOCATED,	/* nrp_alloc_queue() finished successfully */
	NRP_Q_LIVE,		/* fabrics Connect done, open for commands */
	NRP_Q_AER_POSTED,	/* our async event request awaits its answer */
	NRP_Q_DRAINING,		/* in ib_drain_qp(): send_iop reaps sends */
	NRP_Q_REAPER_STOPPED,	/* send_iop disabled for this association */
};

struct nrp_queue {
	struct nrp_ctrl		*ctrl;
	/*
	 * Fixed for the life of the controller (set with ctrl): the queue's
	 * index in ctrl->queues. Kept because the command path needs it on
	 * every I/O, and a pointer difference divided by the struct size
	 * costs more than the load.
	 */
	int			qid;
	struct nrp_device	*dev;
	struct rdma_cm_id	*cm_id;
	struct ib_qp		*qp;
	struct ib_cq		*cq;		/* receives (and sends if polled) */
	/*
	 * Send completions of an interrupt-driven queue, on a CQ of their
	 * own that is armed only on demand: they are reaped when a response
	 * arrives (see nrp_reap_sends()), or in softirq by send_iop when
	 * the CQ's event comes, for a request whose response came first.
	 * send_waiters counts those requests.
	 */
	struct ib_cq		*send_cq;
	int			send_cq_depth;
	atomic_t		send_waiters;
	struct irq_poll		send_iop;
	/* rounds of send_iop that have not returned, see nrp_send_poll() */
	atomic_t		send_polls;
	struct nrp_qe		*rsp_ring;
	unsigned long		flags;		/* enum nrp_queue_flags */
	int			depth;
	int			cq_depth;
	u32			mr_pages;	/* page list of each pool MR */
	bool			polled;		/* CQ reaped only by blk-mq poll */
	size_t			capsule_len;
	int			cm_error;
	struct completion	cm_done;
	struct mutex		stop_lock;	/* one drain at a time */
	/*
	 * Send WRs of requests queued with bd->last == false, posted as one
	 * chain by the last request of the batch or by ->commit_rqs(). The
	 * lock is only taken in process context (queue_rq, commit_rqs,
	 * queue teardown), never from a completion: no IRQ-safe variant.
	 */
	spinlock_t		sq_lock;
	struct ib_send_wr	*sq_head;
	struct ib_send_wr	*sq_tail;
	/*
	 * One MR per tag, allocated when the queue is built and deregistered
	 * when it goes: a command registers with the MR of its tag, so the
	 * command path takes no pool lock. A slot is NULL once its MR was
	 * deregistered early, after a drain, because its rkey may have been
	 * live (nrp_dereg_inflight_mrs()). Only the request owning the tag
	 * touches its slot.
	 */
	struct ib_mr		**tag_mrs;
	u32			nr_tag_mrs;
	/*
	 * Commands the tag set may hand this queue (tags_max) and what the
	 * controller granted (depth): fewer when a reconnect granted a
	 * smaller sqsize than the tag set was built for. Then, and only
	 * then, inflight counts the commands on the queue and holds back
	 * those beyond depth, which neither the send queue nor the target
	 * would take.
	 */
	u32			tags_max;
	atomic_t		inflight;

	/* survive reconnects, like the queue itself (see nrp_ctrl.queues) */
	struct nrp_stats	stats ____cacheline_aligned_in_smp;
};

/*
 * Faults debugfs can ask for (fault_* files of a controller), each the
 * number of times still to inject it.
 */
enum nrp_fault {
	/* the next requests that end a batch behind unposted ones: -EIO map */
	NRP_FAULT_MAP_LAST,
	/* the next chains: the provider takes the first REG_MR, refuses the rest */
	NRP_FAULT_POST,
	/* the next responses claim the target invalidated a foreign rkey */
	NRP_FAULT_BOGUS_INV,
	/* the next send-reaper rounds start late, racing queue teardown */
	NRP_FAULT_REAP_DELAY,
	/*
	 * the next queue connects send no connect request: the attempt waits
	 * for the bound of a connect, as with a target that drops packets
	 */
	NRP_FAULT_CM_SILENT,
	NRP_FAULT_COUNT
};

struct nrp_ctrl {
	struct nrp_queue	*queues;	/* [0] admin, then I/O */
	struct nrp_device	*dev;		/* that of the admin queue */
	/*
	 * Identity of the ib_device of the last association, compared (never
	 * dereferenced) when that device goes away.
	 */
	struct ib_device	*ibdev;
	u32			fr_page_list_len;	/* as the device reports it */
	u32			max_fr_pages;	/* per command, before MDTS */
	u32			mr_pages_cap;	/* max_mr_pages at creation */
	/*
	 * Page list of the I/O queues' MRs: the most any association of
	 * this controller needed, never less. Requests built under a larger
	 * MDTS than the target now reports come back after a reconnect and
	 * must still map.
	 */
	u32			io_mr_pages;
	/* debugfs: cap the transfer size as if MDTS said so, 0 off */
	u32			fault_mdts_kb;
	/* debugfs: cap the queue size as if the target granted no more, 0 off */
	u32			fault_queue_size;
	u32			io_queues[HCTX_MAX_TYPES];
	bool			use_inline;
	bool			p2p_capable;
	/* p2p_capable was decided once (rdma_p2p_mpath.c); under its locks */
	bool			p2p_decided;
	/*
	 * Ask the target to invalidate each command's rkey with its response
	 * (default). debugfs turns it off to run the LOCAL_INV path, which is
	 * what a target that never invalidates remotely makes us take.
	 */
	bool			remote_inv;

	struct blk_mq_tag_set	admin_set;
	struct blk_mq_tag_set	io_set;
	struct nrp_qe		aen_qe;

	struct work_struct	err_work;
	struct delayed_work	reconnect_work;
	struct delayed_work	failfast_work;	/* see nrp_failfast_work() */
	struct list_head	node;		/* on the module's ctrl list */
	struct list_head	mpath_node;	/* see rdma_p2p_mpath.c */

	struct sockaddr_storage	dst_addr;
	struct sockaddr_storage	src_addr;

	/* events of the controller as a whole; each queue has its own */
	struct nrp_stats	stats;
	/*
	 * Entries of queues, fixed at creation: the most queues the
	 * controller may ever get (nrp_create_ctrl()), while queue_count
	 * is what the current association has.
	 */
	u32			nr_queues_max;
	struct dentry		*debugfs_dir;
	atomic_t		faults[NRP_FAULT_COUNT];

	struct nvme_ctrl	ctrl;
};

static inline struct nrp_ctrl *to_nrp_ctrl(struct nvme_ctrl *nctrl)
{
	return container_of(nctrl, struct nrp_ctrl, ctrl);
}

static inline int nrp_qid(struct nrp_queue *queue)
{
	return queue->qid;
}

/* Room for in-capsule data behind the 64-byte command. */
static inline size_t nrp_inline_capacity(struct nrp_queue *queue)
{
	if (queue->capsule_len <= sizeof(struct nvme_command))
		return 0;
	return queue->capsule_len - sizeof(struct nvme_command);
}

/* An event of the controller as a whole (recovery, reconnect). */
static inline void nrp_stat_inc(struct nrp_ctrl *ctrl, enum nrp_stat s)
{
	atomic64_inc(&ctrl->stats.v[s]);
}

/* An event of one queue, in its own row. */
static inline void nrp_qstat_add(struct nrp_queue *queue, enum nrp_stat s,
				 u64 n)
{
	atomic64_add(n, &queue->stats.v[s]);
}

static inline void nrp_qstat_inc(struct nrp_queue *queue, enum nrp_stat s)
{
	nrp_qstat_add(queue, s, 1);
}

DECLARE_STATIC_KEY_FALSE(nrp_fault_key);

/* No fault was ever asked for: one patched jump, no memory access. */
static inline bool nrp_faults_off(void)
{
	return !static_branch_unlikely(&nrp_fault_key);
}

/* Consume one injection of @f if debugfs asked for it. */
static inline bool nrp_fault(struct nrp_ctrl *ctrl, enum nrp_fault f)
{
	if (nrp_faults_off())
		return false;
	return atomic_add_unless(&ctrl->faults[f], -1, 0);
}

/* rdma_p2p_main.c */
extern bool nrp_register_always;
extern bool nrp_allow_soft_p2p;
extern unsigned int nrp_max_mr_pages;

/* rdma_p2p_ctrl.c */
struct nvme_ctrl *nrp_create_ctrl(struct device *dev,
				  struct nvmf_ctrl_options *opts);
void nrp_error_recovery(struct nrp_ctrl *ctrl);
void nrp_delete_ctrls_on(struct ib_device *ibdev, const char *why);
void nrp_delete_all_ctrls(void);
void nrp_init_ctrl_ops(const char *name);
bool nrp_is_our_ctrl(struct nvme_ctrl *nctrl);

/* rdma_p2p_mpath.c */
int nrp_mpath_init(struct dentry *debugfs_root);
void nrp_mpath_exit(void);
void nrp_mpath_ctrl_add(struct nrp_ctrl *ctrl);
void nrp_mpath_ctrl_decided(struct nrp_ctrl *ctrl);
void nrp_mpath_paths_follow(struct nrp_ctrl *ctrl);
void nrp_mpath_ctrl_del(struct nrp_ctrl *ctrl);
void nrp_mpath_ctrl_down(struct nrp_ctrl *ctrl);
void nrp_mpath_refresh(void);
void nrp_p2p_block_failover(struct request *rq);
bool nrp_p2p_failover_refused(struct request *rq);
bool nrp_rq_has_p2p(struct request *rq);

/* rdma_p2p_queue.c */
int nrp_alloc_qe(struct ib_device *ibdev, struct nrp_qe *qe, size_t len,
		 enum dma_data_direction dir);
void nrp_free_qe(struct ib_device *ibdev, struct nrp_qe *qe, size_t len,
		 enum dma_data_direction dir);
u32 nrp_max_fr_pages(struct ib_device *ibdev, u32 cap);
bool nrp_ibdev_p2p_ok(struct ib_device *ibdev);
bool nrp_device_dying(struct nrp_device *dev);
bool nrp_device_mark_dying(struct nrp_dying *d);
void nrp_device_wait_unused(struct nrp_dying *d);
int nrp_alloc_queue(struct nrp_ctrl *ctrl, int qid, int depth);
int nrp_start_queue(struct nrp_ctrl *ctrl, int qid);
void nrp_stop_queue(struct nrp_queue *queue);
void nrp_free_queue(struct nrp_queue *queue);
void nrp_init_queue(struct nrp_ctrl *ctrl, int qid);
void nrp_exit_queue(struct nrp_queue *queue);

/* rdma_p2p_io.c */
void nrp_expire_inflight(struct nrp_queue *queue);
extern const struct blk_mq_ops nrp_admin_mq_ops;
extern const struct blk_mq_ops nrp_io_mq_ops;
unsigned int nrp_usable_cpus(void);
int nrp_post_recv(struct nrp_queue *queue, struct nrp_qe *qe);
int nrp_send_poll(struct irq_poll *iop, int budget);
void nrp_send_cq_event(struct ib_cq *cq, void *queue);
void nrp_arm_send_reaper(struct nrp_queue *queue);
void nrp_submit_async_event(struct nvme_ctrl *nctrl);
void nrp_discard_unposted(struct nrp_queue *queue);
void nrp_dereg_inflight_mrs(struct nrp_queue *queue);

/* rdma_p2p_map.c */
void nrp_set_null_sgl(struct nvme_command *cmd);
int nrp_map_data(struct nrp_queue *queue, struct request *rq,
		 struct nvme_command *cmd);
void nrp_dma_unmap(struct nrp_queue *queue, struct request *rq);

/*
 * Undo nrp_map_data(). Inline: it runs on every completion and mostly
 * decides that there is nothing but the DMA mapping to undo.
 */
static inline void nrp_unmap_data(struct nrp_queue *queue, struct request *rq)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);

	/* the MR stays with the tag, its rkey dead (see nrp_request.pending) */
	req->mr = NULL;
	if (req->dma_kind != NRP_DMA_NONE)
		nrp_dma_unmap(queue, rq);
}

/* rdma_p2p_stats.c */
void nrp_stats_register(struct nrp_ctrl *ctrl);
void nrp_stats_unregister(struct nrp_ctrl *ctrl);
struct dentry *nrp_stats_init(void);
void nrp_stats_exit(void);
void nrp_fault_free_delay(void);
void nrp_fault_file(const char *name, struct dentry *dir, atomic_t *f);

#endif /* NRP_H */
