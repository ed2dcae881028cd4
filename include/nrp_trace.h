/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvme-rdma-p2p: tracepoints, system "nvme_rdma_p2p" in tracefs.
 *
 * Every event of a command names the controller instance (nvmeX), the
 * queue id and the NVMe command id, so that one command can be followed
 * from submission through mapping to completion. A tracepoint that is not
 * enabled costs one patched jump (a static key) and evaluates none of its
 * arguments' fields: the assignments below run only when it is enabled.
 *
 * The header is read more than once (TRACE_HEADER_MULTI_READ) and lives
 * out of the kernel's tree: TRACE_INCLUDE_PATH "." with this directory on
 * the include path (Kbuild) lets define_trace.h find it again.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM nvme_rdma_p2p

#if !defined(NRP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define NRP_TRACE_H

#include <linux/tracepoint.h>

#include "nrp.h"

TRACE_EVENT(nrp_submit,
	    TP_PROTO(struct nrp_queue *queue, struct request *rq,
		     struct nvme_command *cmd),
	    TP_ARGS(queue, rq, cmd),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, qid)
			     __field(u16, cid)
			     __field(int, tag)
			     __field(u8, opcode)
			     __field(u32, nsid)
			     __field(u32, bytes)
	    ),
	    TP_fast_assign(__entry->ctrl = queue->ctrl->ctrl.instance;
			   __entry->qid = nrp_qid(queue);
			   __entry->cid = cmd->common.command_id;
			   __entry->tag = rq->tag;
			   __entry->opcode = cmd->common.opcode;
			   __entry->nsid = le32_to_cpu(cmd->common.nsid);
			   __entry->bytes = blk_rq_nr_phys_segments(rq) ?
					    blk_rq_payload_bytes(rq) : 0;
	    ),
	    TP_printk("nvme%d qid=%d cid=%#x tag=%d opcode=%#x nsid=%u bytes=%u",
		      __entry->ctrl, __entry->qid, __entry->cid, __entry->tag,
		      __entry->opcode, __entry->nsid, __entry->bytes)
);

TRACE_EVENT(nrp_map,
	    TP_PROTO(struct nrp_queue *queue, struct request *rq, bool p2p,
		     int segments, u32 p2p_bytes, u32 p2p_segments),
	    TP_ARGS(queue, rq, p2p, segments, p2p_bytes, p2p_segments),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, qid)
			     __field(u16, cid)
			     __field(bool, p2p)
			     __field(u32, bytes)
			     __field(int, segments)
			     __field(u32, p2p_bytes)
			     __field(u32, p2p_segments)
	    ),
	    TP_fast_assign(__entry->ctrl = queue->ctrl->ctrl.instance;
			   __entry->qid = nrp_qid(queue);
			   __entry->cid = nvme_cid(rq);
			   __entry->p2p = p2p;
			   __entry->bytes = blk_rq_payload_bytes(rq);
			   __entry->segments = segments;
			   __entry->p2p_bytes = p2p_bytes;
			   __entry->p2p_segments = p2p_segments;
	    ),
	    TP_printk("nvme%d qid=%d cid=%#x memory=%s bytes=%u segments=%d p2p_bytes=%u p2p_segments=%u",
		      __entry->ctrl, __entry->qid, __entry->cid,
		      __entry->p2p ? "p2p" : "host",
		      __entry->bytes, __entry->segments, __entry->p2p_bytes,
		      __entry->p2p_segments)
);

TRACE_EVENT(nrp_p2p_refused,
	    TP_PROTO(struct nrp_queue *queue, struct request *rq),
	    TP_ARGS(queue, rq),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, qid)
			     __field(u16, cid)
			     __field(u32, bytes)
			     __array(char, ibdev, IB_DEVICE_NAME_MAX)
	    ),
	    TP_fast_assign(__entry->ctrl = queue->ctrl->ctrl.instance;
			   __entry->qid = nrp_qid(queue);
			   __entry->cid = nvme_cid(rq);
			   __entry->bytes = blk_rq_payload_bytes(rq);
			   strscpy(__entry->ibdev,
				   dev_name(&queue->dev->ibdev->dev),
				   IB_DEVICE_NAME_MAX);
	    ),
	    TP_printk("nvme%d qid=%d cid=%#x bytes=%u: P2P memory not reachable from %s",
		      __entry->ctrl, __entry->qid, __entry->cid, __entry->bytes,
		      __entry->ibdev)
);

TRACE_EVENT(nrp_complete,
	    TP_PROTO(struct nrp_queue *queue, struct request *rq, __le16 status),
	    TP_ARGS(queue, rq, status),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, qid)
			     __field(u16, cid)
			     __field(u16, status)
	    ),
	    TP_fast_assign(__entry->ctrl = queue->ctrl->ctrl.instance;
			   __entry->qid = nrp_qid(queue);
			   __entry->cid = nvme_cid(rq);
			   /* the phase bit is not part of the status */
			   __entry->status = le16_to_cpu(status) >> 1;
	    ),
	    TP_printk("nvme%d qid=%d cid=%#x status=%#x",
		      __entry->ctrl, __entry->qid, __entry->cid, __entry->status)
);

TRACE_EVENT(nrp_error_recovery,
	    TP_PROTO(struct nrp_ctrl *ctrl),
	    TP_ARGS(ctrl),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, queues)
	    ),
	    TP_fast_assign(__entry->ctrl = ctrl->ctrl.instance;
			   __entry->queues = ctrl->ctrl.queue_count;
	    ),
	    TP_printk("nvme%d queues=%d", __entry->ctrl, __entry->queues)
);

TRACE_EVENT(nrp_reconnect,
	    TP_PROTO(struct nrp_ctrl *ctrl, int attempt, int result),
	    TP_ARGS(ctrl, attempt, result),
	    TP_STRUCT__entry(__field(int, ctrl)
			     __field(int, attempt)
			     __field(int, result)
	    ),
	    TP_fast_assign(__entry->ctrl = ctrl->ctrl.instance;
			   __entry->attempt = attempt;
			   __entry->result = result;
	    ),
	    TP_printk("nvme%d attempt=%d result=%d", __entry->ctrl,
		      __entry->attempt, __entry->result)
);

#endif /* NRP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE nrp_trace
#include <trace/define_trace.h>
