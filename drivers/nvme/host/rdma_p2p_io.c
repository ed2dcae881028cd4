// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: the command path.
 *
 * A command completes only after three things happened, in any order: the
 * SEND of its capsule completed locally, the response capsule arrived, and
 * the rkey of its memory registration (if any) is dead, either because the
 * target invalidated it remotely or because our LOCAL_INV completed. Until
 * then the target may still be moving data, or we may still be reading the
 * capsule buffer. nrp_request.pending counts what is still owed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/sched/isolation.h>
#include <linux/slab.h>

#include "nrp.h"
#include "nrp_trace.h"

static void nrp_recv_done(struct ib_cq *cq, struct ib_wc *wc);

static struct blk_mq_tags *nrp_queue_tags(struct nrp_queue *queue)
{
	int qid = nrp_qid(queue);

	if (!qid)
		return queue->ctrl->admin_set.tags[0];
	return queue->ctrl->io_set.tags[qid - 1];
}

static void nrp_wr_failed(struct nrp_queue *queue, struct ib_wc *wc,
			  const char *what)
{
	struct nrp_ctrl *ctrl = queue->ctrl;

	/*
	 * Flushes while tearing down are expected and not worth a line;
	 * any other error is the reason something fails, also while
	 * connecting, where it is otherwise only seen as a timeout.
	 */
	if (wc->status != IB_WC_WR_FLUSH_ERR ||
	    nvme_ctrl_state(&ctrl->ctrl) == NVME_CTRL_LIVE) {
		nrp_qstat_inc(queue, NRP_STAT_ERRORS);
		dev_info(ctrl->ctrl.device,
			 "%s for CQE 0x%p failed with status %s (%d): queue %d\n",
			 what, wc->wr_cqe, ib_wc_status_msg(wc->status),
			 wc->status, nrp_qid(queue));
	}
	nrp_error_recovery(ctrl);
}

static void nrp_protocol_error(struct nrp_queue *queue)
{
	nrp_qstat_inc(queue, NRP_STAT_ERRORS);
	nrp_error_recovery(queue->ctrl);
}

static void nrp_unmap_rq(struct nrp_queue *queue, struct request *rq)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);

	nrp_unmap_data(queue, rq);
	ib_dma_unmap_single(queue->dev->ibdev, req->sqe.dma,
			    sizeof(struct nvme_command), DMA_TO_DEVICE);
}

/* The request leaves the queue's count of commands (see nrp_queue.tags_max). */
static void nrp_uncount(struct nrp_queue *queue, struct nrp_request *req)
{
	if (unlikely(req->counted)) {
		req->counted = false;
		atomic_dec(&queue->inflight);
	}
}

static void nrp_complete_rq(struct request *rq)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);

	/* see nrp_p2p_block_failover(): a P2P request failing over */
	if (unlikely(req->dma_kind == NRP_DMA_P2P) && nvme_req(rq)->status)
		nrp_p2p_block_failover(rq);
	nrp_unmap_rq(req->queue, rq);
	nrp_uncount(req->queue, req);
	nvme_complete_rq(rq);
}

/*
 * A request our queue gives up before posting it: a host path error, which
 * the core retries or, for a multipath namespace, sends down another path.
 * Unless it carries P2P pages and its head no longer takes them (see
 * nrp_p2p_block_failover()): then it fails as P2P refused. Its data, if
 * it was mapped, is unmapped already.
 */
static void nrp_path_error(struct request *rq, bool p2p)
{
	if (likely(!p2p)) {
		nvme_host_path_error(rq);
		return;
	}
	nvme_req(rq)->status = NVME_SC_HOST_PATH_ERROR;
	nrp_p2p_block_failover(rq);
	blk_mq_set_request_complete(rq);
	nvme_complete_rq(rq);
}

/* The last event a request waited for happened: complete it. */
static void nrp_end_req(struct nrp_request *req)
{
	struct request *rq = blk_mq_rq_from_pdu(req);

	trace_nrp_complete(req->queue, rq, req->status);
	if (!nvme_try_complete_req(rq, req->status, req->result))
		nrp_complete_rq(rq);
}

/*
 * Drop one of the events a request waits for; the last one completes it
 * (and then true). Inline: every I/O drops two (SEND and response), and
 * only one of them has more to do than the decrement.
 */
static __always_inline bool nrp_put_req(struct nrp_request *req)
{
	if (!refcount_dec_and_test(&req->pending))
		return false;
	nrp_end_req(req);
	return true;
}

/*
 * A send completion (SEND or LOCAL_INV) dropped its reference. If that
 * completed the request, its response had come first and counted it as a
 * waiter of send_iop (nrp_handle_rsp()): it waits no more.
 */
static __always_inline void nrp_put_req_send(struct nrp_queue *queue,
					     struct nrp_request *req)
{
	if (nrp_put_req(req) && !queue->polled)
		atomic_dec(&queue->send_waiters);
}

static void nrp_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct nrp_qe *qe = container_of(wc->wr_cqe, struct nrp_qe, cqe);
	struct nrp_request *req = container_of(qe, struct nrp_request, sqe);

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		nrp_wr_failed(wc->qp->qp_context, wc, "SEND");
		return;
	}
	nrp_put_req_send(req->queue, req);
}

/* REG_MR is posted unsignaled: only failures come back here. */
static void nrp_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct nrp_request *req;

	if (likely(wc->status == IB_WC_SUCCESS))
		return;
	/*
	 * Which key the provider refused: rxe names the key its MR holds
	 * ("not free"), so the two together tell a registration done twice
	 * (same key) from an MR reused while still valid (older key).
	 */
	if (wc->status != IB_WC_WR_FLUSH_ERR) {
		req = container_of(wc->wr_cqe, struct nrp_request, reg_cqe);
		dev_info(req->queue->ctrl->ctrl.device,
			 "REG_MR of rkey %#x refused: queue %d\n",
			 req->reg_wr.key, nrp_qid(req->queue));
	}
	nrp_wr_failed(wc->qp->qp_context, wc, "REG_MR");
}

static void nrp_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct nrp_request *req =
		container_of(wc->wr_cqe, struct nrp_request, inv_cqe);

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		nrp_wr_failed(wc->qp->qp_context, wc, "LOCAL_INV");
		return;
	}
	nrp_put_req_send(req->queue, req);
}

static void nrp_aen_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (unlikely(wc->status != IB_WC_SUCCESS))
		nrp_wr_failed(wc->qp->qp_context, wc, "AEN SEND");
}

static int nrp_post_local_inv(struct nrp_queue *queue,
			      struct nrp_request *req)
{
	struct ib_send_wr wr = {
		.wr_cqe			= &req->inv_cqe,
		.opcode			= IB_WR_LOCAL_INV,
		.send_flags		= IB_SEND_SIGNALED,
		.ex.invalidate_rkey	= req->mr->rkey,
	};

	nrp_qstat_inc(queue, NRP_STAT_LOCAL_INV);
	return ib_post_send(queue->qp, &wr, NULL);
}

int nrp_post_recv(struct nrp_queue *queue, struct nrp_qe *qe)
{
	struct ib_sge sge = {
		.addr	= qe->dma,
		.length	= sizeof(struct nvme_completion),
		.lkey	= queue->dev->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe		= &qe->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
	};
	int ret;

	qe->cqe.done = nrp_recv_done;
	ret = ib_post_recv(queue->qp, &wr, NULL);
	if (unlikely(ret))
		dev_err(queue->ctrl->ctrl.device,
			"queue %d: posting a receive failed: %d\n",
			nrp_qid(queue), ret);
	return ret;
}

/*
 * Why sends have a CQ of their own, armed only on demand (in-tree has one
 * CQ per queue, always armed, so every SEND completion raises an event):
 * a SEND completes when the target's ACK comes back, which is nearly
 * always before the target's response, and the response is what a
 * request really waits for. An event costs a provider callback, a
 * softirq round and re-arming the CQ; one per command only to learn that
 * the capsule left. So the send CQ is polled when a response arrives
 * whose SEND has not been seen yet: the SEND completion is found there
 * and the response completes the request, as the only event of the
 * command. Every SEND is still signaled; only the event is saved.
 */
static void nrp_reap_sends(struct nrp_queue *queue)
{
	if (!queue->polled)
		ib_process_cq_direct(queue->send_cq, queue->send_cq_depth);
}

/* Have the next send completion raise an event; true if one came already. */
static bool nrp_arm_send_cq(struct nrp_queue *queue)
{
	return ib_req_notify_cq(queue->send_cq, IB_CQ_NEXT_COMP |
				IB_CQ_REPORT_MISSED_EVENTS) > 0;
}

/*
 * The response came and the request still waits for a send completion
 * (its SEND, when the ACK lost the race, or the LOCAL_INV just posted):
 * arm the send CQ, whose event has send_iop reap it.
 */
static void nrp_wait_send(struct nrp_queue *queue)
{
	/* a polled queue's one CQ is reaped by blk-mq polling */
	if (queue->polled)
		return;
	nrp_qstat_inc(queue, NRP_STAT_SEND_WAITS);
	atomic_inc(&queue->send_waiters);
	if (nrp_arm_send_cq(queue))
		irq_poll_sched(&queue->send_iop);
}

/*
 * The send CQ's event handler (hard IRQ or the provider's own softirq): it
 * fires only when armed, nrp_arm_send_cq(). The reaping is done by
 * send_iop in softirq, where ib_core's own CQs complete theirs: not on a
 * workqueue, whose worker the reconnect's drain might wait behind. Our
 * handler on a CQ that ib_core made direct-polled: see nrp_alloc_cqs().
 */
void nrp_send_cq_event(struct ib_cq *cq, void *context)
{
	struct nrp_queue *queue = context;

	nrp_qstat_inc(queue, NRP_STAT_SEND_EVENTS);
	irq_poll_sched(&queue->send_iop);
}

/* ib_drain_qp() waits for its marker on the send CQ: have it reaped. */
void nrp_arm_send_reaper(struct nrp_queue *queue)
{
	if (nrp_arm_send_cq(queue))
		irq_poll_sched(&queue->send_iop);
}

int nrp_send_poll(struct irq_poll *iop, int budget)
{
	struct nrp_queue *queue = container_of(iop, struct nrp_queue,
					       send_iop);
	int done;

	/*
	 * Until this round returns, the queue's teardown must not free the
	 * send CQ (nrp_stop_send_reaper() waits for the count): the round
	 * still arms it after irq_poll_complete(), which is all that
	 * irq_poll_disable() waits for, and by then another round may have
	 * started on another CPU, so a count, not a flag. Raised while
	 * irq_poll still owns the round: irq_poll_complete() orders it
	 * before a disable can take the round over.
	 */
	atomic_inc(&queue->send_polls);
	/*
	 * Fault injection: a round that starts late, so that a teardown
	 * begun meanwhile finds it running (nrp_stop_send_reaper() waits).
	 */
	if (unlikely(!nrp_faults_off()) &&
	    nrp_fault(queue->ctrl, NRP_FAULT_REAP_DELAY))
		mdelay(NRP_FAULT_REAP_DELAY_MS);
	done = ib_process_cq_direct(queue->send_cq, budget);
	/* a full budget: irq_poll calls again in its next round */
	if (done >= budget)
		goto out;
	irq_poll_complete(iop);
	/*
	 * Nobody waits any more: leave the CQ unarmed. A request that saw
	 * a failed send is the tag set's to cancel once the QP is drained.
	 */
	if ((atomic_read(&queue->send_waiters) <= 0 ||
	     !test_bit(NRP_Q_CONNECTED, &queue->flags)) &&
	    !test_bit(NRP_Q_DRAINING, &queue->flags))
		goto out;
	/*
	 * Fault injection: arm late, with irq_poll given back, so that a
	 * drain ending meanwhile has its teardown wait for this round.
	 */
	if (unlikely(!nrp_faults_off()) &&
	    nrp_fault(queue->ctrl, NRP_FAULT_REAP_DELAY))
		mdelay(NRP_FAULT_REAP_DELAY_MS);
	/*
	 * Someone waits (or ib_drain_qp() waits for its marker): ask for an
	 * event on the next send completion, and poll again at once if one
	 * slipped in before the CQ was armed. Armed after giving irq_poll
	 * back, as ib_core's own softirq CQs do: an event between arming
	 * and irq_poll_complete() would find the round still scheduled and
	 * be lost.
	 */
	if (nrp_arm_send_cq(queue))
		irq_poll_sched(iop);
out:
	/* the last use of the CQ is above */
	atomic_dec_return_release(&queue->send_polls);
	return done;
}

static void nrp_handle_rsp(struct nrp_queue *queue,
			   struct nvme_completion *cqe, struct ib_wc *wc)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	struct nrp_request *req;
	struct request *rq;
	bool inv;
	u32 inv_rkey;

	rq = nvme_find_rq(nrp_queue_tags(queue), cqe->command_id);
	if (unlikely(!rq)) {
		dev_err(ctrl->ctrl.device,
			"got bad command_id %#x on QP %#x: queue %d has no such command\n",
			cqe->command_id, queue->qp->qp_num, nrp_qid(queue));
		nrp_protocol_error(queue);
		return;
	}
	req = blk_mq_rq_to_pdu(rq);
	/*
	 * The command id still names this request (same generation), but
	 * its response came already: the request may be complete, even
	 * freed, or waiting for its LOCAL_INV. Taking this one as well
	 * would drop a reference it does not hold, or invalidate its MR
	 * twice.
	 */
	if (unlikely(req->answered)) {
		dev_err_ratelimited(ctrl->ctrl.device,
				    "got a second completion for command %#x on QP %#x: queue %d, ignoring it\n",
				    cqe->command_id, queue->qp->qp_num,
				    nrp_qid(queue));
		nrp_protocol_error(queue);
		return;
	}
	req->answered = true;
	req->status = cqe->status;
	req->result = cqe->result;
	/*
	 * Its SEND completion not seen yet: it is most likely on the send
	 * CQ by now. Responses that come in a batch find theirs already
	 * reaped by the first one's poll.
	 */
	if (refcount_read(&req->pending) > 1)
		nrp_reap_sends(queue);

	inv = wc->wc_flags & IB_WC_WITH_INVALIDATE;
	inv_rkey = inv ? wc->ex.invalidate_rkey : 0;
	if (unlikely(!nrp_faults_off()) && !inv && req->mr &&
	    nrp_fault(ctrl, NRP_FAULT_BOGUS_INV)) {
		/* as if the target had invalidated some other key */
		inv = true;
		inv_rkey = ib_inc_rkey(req->mr->rkey);
	}

	if (unlikely(inv && (!req->mr || inv_rkey != req->mr->rkey))) {
		/*
		 * The target invalidated a key that is not this command's:
		 * this command's own rkey, if it has one, is still valid, and
		 * its MR must not be registered again like that. Treat the
		 * response as one without invalidation: the command completes
		 * only once our LOCAL_INV did. Whichever command owned the
		 * key the target killed sees that as its own error. The
		 * connection itself is fine, so no recovery.
		 */
		nrp_qstat_inc(queue, NRP_STAT_BOGUS_INV);
		dev_warn_ratelimited(ctrl->ctrl.device,
				     "Bogus remote invalidation for rkey %#x: queue %d, the target invalidated rkey %#x for command %#x, invalidating locally\n",
				     req->mr ? req->mr->rkey : 0, nrp_qid(queue),
				     inv_rkey, cqe->command_id);
		inv = false;
	}

	if (inv) {
		nrp_qstat_inc(queue, NRP_STAT_REMOTE_INV);
	} else if (req->mr) {
		int ret = nrp_post_local_inv(queue, req);

		if (unlikely(ret)) {
			dev_err(ctrl->ctrl.device,
				"Queueing INV WR for rkey %#x failed (%d): queue %d\n",
				req->mr->rkey, ret, nrp_qid(queue));
			nrp_protocol_error(queue);
			return;
		}
		/* the response's reference now belongs to the LOCAL_INV */
		nrp_wait_send(queue);
		return;
	}

	if (!nrp_put_req(req))
		nrp_wait_send(queue);
}

/*
 * Only the one async event request we posted may complete: the core posts
 * another for each event, so events nobody asked for would have it post
 * requests without bound, all from the one AER capsule buffer.
 */
static void nrp_handle_aen(struct nrp_queue *queue,
			   struct nvme_completion *cqe)
{
	if (unlikely(!test_and_clear_bit(NRP_Q_AER_POSTED, &queue->flags))) {
		dev_err_ratelimited(queue->ctrl->ctrl.device,
				    "got async event completion %#x with none outstanding: queue %d\n",
				    cqe->command_id, nrp_qid(queue));
		nrp_protocol_error(queue);
		return;
	}
	/*
	 * The AER's SEND completion, most likely on the send CQ by now: no
	 * admin command may come between two events (keep-alives are
	 * skipped while I/O flows, with TBKAS), and nothing else would reap
	 * it before the CQ is full.
	 */
	nrp_reap_sends(queue);
	nvme_complete_async_event(&queue->ctrl->ctrl, cqe->status,
				  &cqe->result);
}

static void nrp_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct nrp_qe *qe = container_of(wc->wr_cqe, struct nrp_qe, cqe);
	struct nrp_queue *queue = wc->qp->qp_context;
	struct ib_device *ibdev = queue->dev->ibdev;
	struct nvme_completion *cqe = qe->buf;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		nrp_wr_failed(queue, wc, "RECV");
		return;
	}

	if (unlikely(wc->byte_len < sizeof(*cqe))) {
		dev_err(queue->ctrl->ctrl.device,
			"Unexpected nvme completion length(%d): queue %d\n",
			wc->byte_len, nrp_qid(queue));
		nrp_protocol_error(queue);
		return;
	}

	ib_dma_sync_single_for_cpu(ibdev, qe->dma, sizeof(*cqe),
				   DMA_FROM_DEVICE);
	/*
	 * Async event requests have no struct request behind them (they
	 * never time out and must survive queue freezes), so they are
	 * recognised by their command id.
	 */
	if (unlikely(nvme_is_aen_req(nrp_qid(queue), cqe->command_id)))
		nrp_handle_aen(queue, cqe);
	else
		nrp_handle_rsp(queue, cqe, wc);
	ib_dma_sync_single_for_device(ibdev, qe->dma, sizeof(*cqe),
				      DMA_FROM_DEVICE);

	nrp_post_recv(queue, qe);
}

void nrp_submit_async_event(struct nvme_ctrl *nctrl)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(nctrl);
	struct nrp_queue *queue = &ctrl->queues[0];
	struct nrp_qe *qe = &ctrl->aen_qe;
	struct nvme_command *cmd = qe->buf;
	struct ib_device *ibdev;
	struct ib_sge sge;
	struct ib_send_wr wr = {
		.wr_cqe		= &qe->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
	};
	int ret;

	/* recovery will ask again once the admin queue is back */
	if (!test_bit(NRP_Q_LIVE, &queue->flags) || !cmd)
		return;
	/* one at a time: the capsule buffer is shared */
	if (test_and_set_bit(NRP_Q_AER_POSTED, &queue->flags))
		return;

	ibdev = queue->dev->ibdev;
	ib_dma_sync_single_for_cpu(ibdev, qe->dma, sizeof(*cmd),
				   DMA_TO_DEVICE);
	memset(cmd, 0, sizeof(*cmd));
	cmd->common.opcode = nvme_admin_async_event;
	cmd->common.command_id = NVME_AQ_BLK_MQ_DEPTH;
	cmd->common.flags |= NVME_CMD_SGL_METABUF;
	nrp_set_null_sgl(cmd);
	ib_dma_sync_single_for_device(ibdev, qe->dma, sizeof(*cmd),
				      DMA_TO_DEVICE);

	qe->cqe.done = nrp_aen_send_done;
	sge.addr = qe->dma;
	sge.length = sizeof(*cmd);
	sge.lkey = queue->dev->pd->local_dma_lkey;

	ret = ib_post_send(queue->qp, &wr, NULL);
	if (unlikely(ret)) {
		clear_bit(NRP_Q_AER_POSTED, &queue->flags);
		dev_err(ctrl->ctrl.device,
			"posting the async event request failed: %d\n", ret);
	}
}

/*
 * The REG_MR of @req was posted, its SEND was not: the rkey is valid over
 * its pages, and only a LOCAL_INV or deregistration ends it. The request
 * must not complete (its pages unmapped) while that rkey lives: it stays
 * in flight, answered (no response is coming for it, and a response with
 * its command id would be the target's error), until the failed post's
 * recovery (or, while connecting, its timeout) drains the QP, which
 * deregisters its MR (nrp_dereg_inflight_mrs()) before the request is
 * cancelled.
 */
static void nrp_park_req(struct nrp_queue *queue, struct nrp_request *req)
{
	req->answered = true;
	nrp_qstat_inc(queue, NRP_STAT_MRS_HELD);
}

/*
 * Fail requests whose WRs never reached the send queue: @wr is the first
 * WR the provider refused, everything chained behind it was not posted
 * either. Every request contributes exactly one SEND, possibly preceded
 * by its REG_MR.
 */
static void nrp_fail_unposted(struct nrp_queue *queue,
			      const struct ib_send_wr *wr)
{
	/* a refused SEND first in line had its REG_MR taken, if it has one */
	bool reg_posted = wr && wr->opcode == IB_WR_SEND;
	const struct ib_send_wr *next;
	bool p2p;

	for (; wr; wr = next) {
		struct nrp_request *req;
		struct request *rq;

		next = wr->next;
		if (wr->opcode != IB_WR_SEND)
			continue;
		req = container_of(wr, struct nrp_request, send_wr);
		rq = blk_mq_rq_from_pdu(req);
		if (reg_posted && req->mr) {
			reg_posted = false;
			nrp_park_req(queue, req);
			continue;
		}
		reg_posted = false;
		/* never sent: no response may complete it */
		req->answered = true;
		p2p = req->dma_kind == NRP_DMA_P2P;
		nrp_unmap_rq(queue, rq);
		nrp_uncount(queue, req);
		nrp_path_error(rq, p2p);
	}
}

static bool nrp_dereg_rq_mr(struct request *rq, void *data)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	struct nrp_queue *queue = data;
	/*
	 * A completion reaped by the drain may still be finishing on another
	 * CPU (blk-mq's remote completion), and clear req->mr meanwhile: the
	 * MR itself stays ours to deregister, its tag's slot too.
	 */
	struct ib_mr *mr = READ_ONCE(req->mr);

	if (req->queue != queue || !mr)
		return true;
	/* the MR belongs to this request's tag, which only it uses */
	if (!WARN_ON_ONCE(queue->tag_mrs[rq->tag] != mr))
		queue->tag_mrs[rq->tag] = NULL;
	ib_dereg_mr(mr);
	WRITE_ONCE(req->mr, NULL);
	return true;
}

/*
 * The QP of @queue is drained. A request still in flight may have a live
 * rkey (its REG_MR executed, no invalidation came), valid on every QP of
 * the protection domain, over pages that completing the request (cancel,
 * timeout) unmaps and frees. Deregister those MRs now, before any of the
 * requests can complete; the queue is rebuilt with new ones. Called with
 * stop_lock held, which the other stoppers (a timeout of another request
 * of the queue) wait for before they complete theirs.
 */
void nrp_dereg_inflight_mrs(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;
	struct blk_mq_tag_set *set;

	set = nrp_qid(queue) ? ctrl->ctrl.tagset : ctrl->ctrl.admin_tagset;
	/* the queue was built before its tag set: no request yet */
	if (!set || !queue->tag_mrs)
		return;
	blk_mq_tagset_busy_iter(set, nrp_dereg_rq_mr, queue);
}

static struct ib_send_wr *nrp_first_reg(struct ib_send_wr *wr)
{
	while (wr && wr->opcode != IB_WR_REG_MR)
		wr = wr->next;
	return wr;
}

/*
 * Fault injection: the provider takes the chain up to and including its
 * first REG_MR (@wr) and refuses everything behind it, as a send queue
 * that fills up in the middle of a chain would.
 */
static int nrp_post_refused(struct nrp_queue *queue, struct ib_send_wr *head,
			    struct ib_send_wr *wr,
			    const struct ib_send_wr **bad)
{
	struct ib_send_wr *rest;
	int ret;

	rest = wr->next;
	wr->next = NULL;
	ret = ib_post_send(queue->qp, head, bad);
	wr->next = rest;
	if (ret)
		return ret;
	*bad = rest;
	return -ENOMEM;
}

/*
 * Fault injection: prove that each use of a request is posted once. Tests
 * that stall softirq (fault_reap_delay) make 6.1's rxe retransmit, and its
 * retry executes again the REG_MRs from the oldest WQE it has not retired,
 * which it refuses ("not free") as it would a REG_MR posted twice: this
 * tells the two apart, with a warning the tests fail on.
 */
static void nrp_mark_posted(struct ib_send_wr *wr)
{
	struct nrp_request *req;

	for (; wr; wr = wr->next) {
		if (wr->opcode != IB_WR_SEND)
			continue;
		req = container_of(wr, struct nrp_request, send_wr);
		WARN_ONCE(req->posted, "nvme_rdma_p2p: tag %d posted twice\n",
			  blk_mq_rq_from_pdu(req)->tag);
		req->posted = true;
	}
}

static void nrp_post_chain(struct nrp_queue *queue, struct ib_send_wr *head)
{
	const struct ib_send_wr *bad = NULL;
	int ret;

	if (!head)
		return;
	if (unlikely(!nrp_faults_off()))
		nrp_mark_posted(head);

	/* fault injection: only chains with a registration qualify */
	if (unlikely(!nrp_faults_off()) && nrp_first_reg(head) &&
	    nrp_fault(queue->ctrl, NRP_FAULT_POST))
		ret = nrp_post_refused(queue, head, nrp_first_reg(head), &bad);
	else
		ret = ib_post_send(queue->qp, head, &bad);
	if (likely(!ret))
		return;

	dev_err_ratelimited(queue->ctrl->ctrl.device,
			    "queue %d: ib_post_send failed: %d\n",
			    nrp_qid(queue), ret);
	nrp_protocol_error(queue);
	nrp_fail_unposted(queue, bad ? bad : head);
}

/* The WRs of a prepared request: its REG_MR if any, then its SEND. */
static struct ib_send_wr *nrp_req_wrs(struct nrp_request *req)
{
	return req->mr ? &req->reg_wr.wr : &req->send_wr;
}

/*
 * Append the WRs of a prepared request to the queue's unposted chain.
 * sq_head is also peeked without the lock by nrp_queue_rq().
 */
static void nrp_chain_req(struct nrp_queue *queue, struct nrp_request *req)
{
	if (queue->sq_tail)
		queue->sq_tail->next = nrp_req_wrs(req);
	else
		WRITE_ONCE(queue->sq_head, nrp_req_wrs(req));
	queue->sq_tail = &req->send_wr;
}

static struct ib_send_wr *nrp_take_chain(struct nrp_queue *queue)
{
	struct ib_send_wr *head = queue->sq_head;

	WRITE_ONCE(queue->sq_head, NULL);
	queue->sq_tail = NULL;
	return head;
}

static void nrp_flush_chain(struct nrp_queue *queue)
{
	struct ib_send_wr *head;

	spin_lock(&queue->sq_lock);
	head = nrp_take_chain(queue);
	spin_unlock(&queue->sq_lock);

	nrp_post_chain(queue, head);
}

/*
 * Forget WRs that were never posted. Only called on a drained queue, whose
 * started requests are then cancelled through the tag set, so nothing here
 * needs completing.
 */
void nrp_discard_unposted(struct nrp_queue *queue)
{
	spin_lock(&queue->sq_lock);
	nrp_take_chain(queue);
	spin_unlock(&queue->sq_lock);
}

enum nrp_prep_result {
	NRP_PREP_READY,		/* mapped and started: post its WRs */
	NRP_PREP_DONE,		/* already completed with an error status */
	NRP_PREP_FAIL,		/* untouched and not started: see *sts */
};

/*
 * The request could not be mapped because its P2P memory is not
 * reachable from this RDMA device. Retrying, requeueing or recovering the
 * connection cannot help and the connection is fine, so only this request
 * fails, before it is started, with the block layer's "target" status:
 * the submitter sees -EREMOTEIO, as with a PCIe NVMe drive that cannot
 * reach the memory.
 */
static blk_status_t nrp_p2p_unreachable(struct nrp_queue *queue,
					struct request *rq)
{
	struct nrp_ctrl *ctrl = queue->ctrl;

	nrp_qstat_inc(queue, NRP_STAT_P2P_UNREACHABLE);
	trace_nrp_p2p_refused(queue, rq);
	dev_warn_ratelimited(ctrl->ctrl.device,
			     "queue %d: P2P memory of tag %d not reachable from %s\n",
			     nrp_qid(queue), rq->tag,
			     dev_name(&queue->dev->ibdev->dev));
	return BLK_STS_TARGET;
}

static enum nrp_prep_result nrp_prep_rq(struct nrp_queue *queue,
					struct request *rq, bool fail_map,
					blk_status_t *sts)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	struct nvme_command *cmd = req->sqe.buf;
	struct ib_device *ibdev = queue->dev->ibdev;
	int ret;

	WARN_ON_ONCE(rq->tag < 0);

	/* a queue granted less than its tag set: hold the rest back */
	if (unlikely(queue->depth < queue->tags_max)) {
		if (atomic_inc_return(&queue->inflight) > queue->depth) {
			atomic_dec(&queue->inflight);
			nrp_qstat_inc(queue, NRP_STAT_DEPTH_WAITS);
			*sts = BLK_STS_RESOURCE;
			return NRP_PREP_FAIL;
		}
		req->counted = true;
	}

	*sts = nvme_setup_cmd(rq->q->queuedata, rq);
	if (unlikely(*sts)) {
		nrp_uncount(queue, req);
		return NRP_PREP_FAIL;
	}

	/* fail_map: fault injection, a mapping that fails */
	ret = unlikely(fail_map) ? -EIO : nrp_map_data(queue, rq, cmd);
	if (unlikely(ret)) {
		switch (ret) {
		case -EREMOTEIO:
			*sts = nrp_p2p_unreachable(queue, rq);
			break;
		case -EIO:
			/* the mapping failed: report a path error, as a peer */
			nrp_uncount(queue, req);
			nvme_start_request(rq);
			nrp_path_error(rq, nrp_rq_has_p2p(rq));
			return NRP_PREP_DONE;
		case -ENOMEM:
		case -EAGAIN:
			*sts = BLK_STS_RESOURCE;
			break;
		default:
			dev_err(queue->ctrl->ctrl.device,
				"Failed to map data (%d): queue %d\n",
				ret, nrp_qid(queue));
			*sts = BLK_STS_IOERR;
			break;
		}
		nvme_cleanup_cmd(rq);
		nrp_uncount(queue, req);
		return NRP_PREP_FAIL;
	}

	/*
	 * The capsule is mapped per command (the buffer lives as long as the
	 * tag set, the device it is mapped for only as long as the queue),
	 * and only once the CPU has written all of it: mapping hands the
	 * device what is there, so no sync is needed on either side of the
	 * writes.
	 */
	req->sqe.dma = ib_dma_map_single(ibdev, cmd, sizeof(*cmd),
					 DMA_TO_DEVICE);
	if (unlikely(ib_dma_mapping_error(ibdev, req->sqe.dma))) {
		nrp_unmap_data(queue, rq);
		nvme_cleanup_cmd(rq);
		nrp_uncount(queue, req);
		*sts = BLK_STS_RESOURCE;
		return NRP_PREP_FAIL;
	}

	/* the rest of send_wr and sge[0] is set once, in nrp_init_request() */
	req->sge[0].addr = req->sqe.dma;
	req->sge[0].lkey = queue->dev->pd->local_dma_lkey;
	req->send_wr.next = NULL;
	req->send_wr.num_sge = req->num_sge;
	req->answered = false;
	req->posted = false;

	nvme_start_request(rq);
	nrp_qstat_inc(queue, NRP_STAT_COMMANDS);
	trace_nrp_submit(queue, rq, cmd);
	return NRP_PREP_READY;
}

static blk_status_t nrp_queue_rq(struct blk_mq_hw_ctx *hctx,
				 const struct blk_mq_queue_data *bd)
{
	struct nrp_queue *queue = hctx->driver_data;
	struct nrp_ctrl *ctrl = queue->ctrl;
	struct request *rq = bd->rq;
	struct ib_send_wr *head = NULL;
	struct nrp_request *req;
	bool live = test_bit(NRP_Q_LIVE, &queue->flags);
	bool fail_map = false;
	blk_status_t sts;

	if (!nvme_check_ready(&ctrl->ctrl, rq, live)) {
		nrp_qstat_inc(queue, NRP_STAT_NOT_READY);
		/*
		 * Requests of multipath namespaces and FAILFAST ones fail now
		 * (a host path error), and the head sends them down another
		 * path. The rest are to wait for the reconnect: not as
		 * BLK_STS_RESOURCE, which has blk-mq dispatch them again every
		 * 3 ms for as long as it takes, but on the dispatch list until
		 * the queues are run: when the controller is live again
		 * (nrp_configure_io_queues()), when fast_io_fail_tmo expires
		 * (nrp_failfast_work()) and on delete (nrp_stop_ctrl()).
		 */
		if (unlikely(rq->cmd_flags & REQ_NVME_MPATH) &&
		    nrp_p2p_failover_refused(rq)) {
			/* P2P pages the head's other paths may not map */
			sts = BLK_STS_TARGET;
			goto out_post_earlier;
		}
		sts = nvme_fail_nonready_command(&ctrl->ctrl, rq);
		if (sts == BLK_STS_RESOURCE)
			sts = BLK_STS_DEV_RESOURCE;
		goto out_post_earlier;
	}
	/*
	 * A queue not yet live takes its Connect and authentication
	 * commands. Once its QP has been drained (the target dropped the
	 * association, a timeout flushed it) nothing posted there can
	 * complete. In-tree posts anyway and waits for the timeout, once
	 * per retry: 60 s six times over for the authentication commands
	 * that 6.12 retries. Fail at once instead.
	 */
	if (unlikely(!live) && !test_bit(NRP_Q_CONNECTED, &queue->flags)) {
		nrp_qstat_inc(queue, NRP_STAT_NOT_READY);
		sts = BLK_STS_IOERR;
		goto out_post_earlier;
	}

	/* fault injection: the last request of a batch fails its mapping */
	if (unlikely(!nrp_faults_off()) && bd->last &&
	    READ_ONCE(queue->sq_head))
		fail_map = nrp_fault(ctrl, NRP_FAULT_MAP_LAST);

	switch (nrp_prep_rq(queue, rq, fail_map, &sts)) {
	case NRP_PREP_READY:
		break;
	case NRP_PREP_DONE:
		sts = BLK_STS_OK;
		goto out_post_earlier;
	case NRP_PREP_FAIL:
		goto out_post_earlier;
	}

	req = blk_mq_rq_to_pdu(rq);
	/*
	 * Alone in its batch, the common case: post it directly, no lock.
	 * Requests chained on another CPU meanwhile (blk-mq may dispatch
	 * to one hctx from several) are posted by that CPU's own last
	 * request or ->commit_rqs(); a chain we miss here is not ours.
	 */
	if (bd->last && !READ_ONCE(queue->sq_head)) {
		nrp_post_chain(queue, nrp_req_wrs(req));
		return BLK_STS_OK;
	}

	/*
	 * Hold the WRs back while blk-mq says more requests follow, so that a
	 * whole batch costs one ib_post_send() (one doorbell).
	 */
	spin_lock(&queue->sq_lock);
	nrp_chain_req(queue, req);
	if (bd->last)
		head = nrp_take_chain(queue);
	spin_unlock(&queue->sq_lock);

	nrp_post_chain(queue, head);
	return BLK_STS_OK;

out_post_earlier:
	/*
	 * This request posts nothing, but blk-mq calls ->commit_rqs() only
	 * when we return an error: one that ended here with BLK_STS_OK (a
	 * host path error) would leave the requests of its batch unposted
	 * until the next batch, or until they time out.
	 */
	if (bd->last)
		nrp_flush_chain(queue);
	return sts;
}

/* blk-mq stopped short of the request it announced as last: post now. */
static void nrp_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	nrp_flush_chain(hctx->driver_data);
}

static int nrp_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct nrp_queue *queue = hctx->driver_data;

	/*
	 * Not NRP_Q_LIVE: the fabrics Connect of a poll queue is itself
	 * completed by polling, before the queue is live.
	 */
	if (!test_bit(NRP_Q_ALLOCATED, &queue->flags))
		return 0;
	return ib_process_cq_direct(queue->cq, -1);
}

static bool nrp_expire_rq(struct request *rq, void *data)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);

	if (req->queue == data)
		blk_abort_request(rq);
	return true;
}

/*
 * The target dropped @queue's association while the controller is
 * connecting (being set up or reconnecting): no error recovery will cancel
 * what is in flight there, and in-tree waits for each command's timeout.
 * Expire them now instead, through the timeout handler, which flushes the
 * queue and fails them as a real timeout would.
 */
void nrp_expire_inflight(struct nrp_queue *queue)
{
	struct nrp_ctrl *ctrl = queue->ctrl;

	/*
	 * The caller holds stop_lock and saw the queue connected: teardown
	 * stops a queue before it frees the tag set, and a freed tag set
	 * has no tags left to walk.
	 */
	lockdep_assert_held(&queue->stop_lock);
	blk_mq_tagset_busy_iter(nrp_qid(queue) ? &ctrl->io_set :
				&ctrl->admin_set, nrp_expire_rq, queue);
}

static enum blk_eh_timer_return nrp_timeout(struct request *rq)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	struct nrp_queue *queue = req->queue;
	struct nrp_ctrl *ctrl = queue->ctrl;

	nrp_qstat_inc(queue, NRP_STAT_TIMEOUTS);
	dev_warn(ctrl->ctrl.device,
		 "I/O %d QID %d timeout: command %#x, opcode %#x\n",
		 rq->tag, nrp_qid(queue), nvme_cid(rq),
		 nvme_req(rq)->cmd->common.opcode);

	if (nvme_ctrl_state(&ctrl->ctrl) != NVME_CTRL_LIVE) {
		/*
		 * Setup, reset and delete wait for this command (a Connect,
		 * a property access, an identify...) and no recovery is
		 * coming to cancel it: flush the queue so that no completion
		 * can touch the request any more, then fail it here.
		 */
		nrp_stop_queue(queue);
		nvmf_complete_timed_out_request(rq);
		return BLK_EH_DONE;
	}

	/* recovery tears the queues down and cancels this request */
	nrp_error_recovery(ctrl);
	return BLK_EH_RESET_TIMER;
}

static int nrp_init_request(struct blk_mq_tag_set *set, struct request *rq,
			    unsigned int hctx_idx, nrp_numa_node_t numa_node)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(set->driver_data);
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	int qid = set == &ctrl->io_set ? hctx_idx + 1 : 0;
	struct nvme_command *cmd;

	cmd = kzalloc_node(sizeof(*cmd), GFP_KERNEL, numa_node);
	if (!cmd)
		return -ENOMEM;

	req->sqe.buf = cmd;

	req->queue = &ctrl->queues[qid];
	req->sqe.cqe.done = nrp_send_done;
	req->reg_cqe.done = nrp_reg_done;
	req->inv_cqe.done = nrp_inv_done;
	/*
	 * What the WRs of every command share, set once rather than on every
	 * I/O: nothing writes these fields afterwards (providers only read
	 * WRs; chaining only sets ->next).
	 */
	req->sge[0].length = sizeof(*cmd);
	memset(&req->send_wr, 0, sizeof(req->send_wr));
	req->send_wr.wr_cqe = &req->sqe.cqe;
	req->send_wr.sg_list = req->sge;
	req->send_wr.opcode = IB_WR_SEND;
	req->send_wr.send_flags = IB_SEND_SIGNALED;
	memset(&req->reg_wr, 0, sizeof(req->reg_wr));
	req->reg_wr.wr.opcode = IB_WR_REG_MR;
	req->reg_wr.wr.wr_cqe = &req->reg_cqe;
	req->reg_wr.wr.next = &req->send_wr;
	req->reg_wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			     IB_ACCESS_REMOTE_WRITE;
	req->dma_kind = NRP_DMA_NONE;
	/* a command id of a request never sent answers nothing */
	req->answered = true;
	req->counted = false;
	nvme_req(rq)->ctrl = &ctrl->ctrl;
	nvme_req(rq)->cmd = cmd;
	return 0;
}

static void nrp_exit_request(struct blk_mq_tag_set *set, struct request *rq,
			     unsigned int hctx_idx)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);

	kfree(req->sqe.buf);
	req->sqe.buf = NULL;
}

static int nrp_init_io_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			    unsigned int hctx_idx)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(data);

	if (WARN_ON_ONCE(hctx_idx + 1 >= ctrl->ctrl.queue_count))
		return -EINVAL;
	hctx->driver_data = &ctrl->queues[hctx_idx + 1];
	return 0;
}

static int nrp_init_admin_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			       unsigned int hctx_idx)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(data);

	if (WARN_ON_ONCE(hctx_idx))
		return -EINVAL;
	hctx->driver_data = &ctrl->queues[0];
	return 0;
}

/*
 * A CPU that can carry a queue's requests: online, and not isolated
 * (isolcpus=, nohz_full=, an isolated cpuset partition), which
 * blk_mq_map_swqueue() leaves out of every hardware context's CPU mask.
 */
static bool nrp_cpu_usable(unsigned int cpu)
{
	return cpu_online(cpu) && !cpu_is_isolated(cpu);
}

/*
 * How many I/O queues of a kind the CPUs can use: the usable CPUs, at least
 * one. The in-tree transport counts the online CPUs; on a host with
 * isolated CPUs that gives queues that no usable CPU can be mapped to.
 */
unsigned int nrp_usable_cpus(void)
{
	unsigned int cpu, n = 0;

	for_each_online_cpu(cpu) {
		if (nrp_cpu_usable(cpu))
			n++;
	}
	return max(n, 1U);
}

/* Does every queue of @map have a usable CPU? */
static bool nrp_map_all_usable(const struct blk_mq_queue_map *map)
{
	unsigned int cpu, q;

	for (q = 0; q < map->nr_queues; q++) {
		bool usable = false;

		for_each_online_cpu(cpu) {
			if (map->mq_map[cpu] == map->queue_offset + q &&
			    nrp_cpu_usable(cpu)) {
				usable = true;
				break;
			}
		}
		if (!usable)
			return false;
	}
	return true;
}

/*
 * blk-mq spreads a map's queues over the possible CPUs, present ones
 * first, whether online or not (6.1 one queue per CPU in CPU order, 6.12
 * in groups of NUMA nodes and siblings). On a host whose CPUs are present
 * but offline (SMT turned off at run time, CPUs an admin took down) or
 * isolated, a queue can get no usable CPU. The core sends the Connect of
 * an I/O queue through a request of that queue's own hardware context, and
 * blk_mq_alloc_request_hctx() refuses it (-EXDEV): the whole connect
 * fails, and with the in-tree nvme_rdma of 6.12 a default connect does on
 * a guest of 240 CPUs present and two online. We count the queues by
 * usable CPUs (nrp_usable_cpus()); where the spread leaves a queue without
 * one, we deal the usable CPUs out first, one queue each in turn, then the
 * others, so that every queue connects and carries I/O. The map is a
 * snapshot, as blk-mq's own: CPUs that go offline later are blk-mq's
 * hotplug handling, and a reconnect maps again only after it has connected
 * the queues the tag set knows (nrp_configure_io_queues(), as in-tree).
 */
static void nrp_map_usable_first(struct blk_mq_queue_map *map)
{
	unsigned int cpu, i = 0;

	if (nrp_map_all_usable(map))
		return;
	for_each_possible_cpu(cpu) {
		if (nrp_cpu_usable(cpu))
			map->mq_map[cpu] = map->queue_offset +
					   i++ % map->nr_queues;
	}
	for_each_possible_cpu(cpu) {
		if (!nrp_cpu_usable(cpu))
			map->mq_map[cpu] = map->queue_offset +
					   i++ % map->nr_queues;
	}
}

/*
 * Hardware queues are laid out as [default][read][poll]. Without write
 * queues reads share the default ones; the default and read maps follow
 * the RDMA device's completion vector affinity.
 */
static void nrp_map_queues(struct blk_mq_tag_set *set)
{
	struct nrp_ctrl *ctrl = to_nrp_ctrl(set->driver_data);
	struct nvmf_ctrl_options *opts = ctrl->ctrl.opts;
	struct blk_mq_queue_map *dflt = &set->map[HCTX_TYPE_DEFAULT];
	struct blk_mq_queue_map *read = &set->map[HCTX_TYPE_READ];
	u32 nr_default = ctrl->io_queues[HCTX_TYPE_DEFAULT];
	u32 nr_read = ctrl->io_queues[HCTX_TYPE_READ];
	u32 nr_poll = ctrl->io_queues[HCTX_TYPE_POLL];

	dflt->nr_queues = nr_default;
	dflt->queue_offset = 0;
	if (ctrl->dev)
		nrp_map_queues_rdma(dflt, ctrl->dev->ibdev);
	else
		blk_mq_map_queues(dflt);
	nrp_map_usable_first(dflt);

	if (opts->nr_write_queues && nr_read) {
		read->nr_queues = nr_read;
		read->queue_offset = nr_default;
		if (ctrl->dev)
			nrp_map_queues_rdma(read, ctrl->dev->ibdev);
		else
			blk_mq_map_queues(read);
		nrp_map_usable_first(read);
	} else {
		/*
		 * The same queues, so the same map, copied rather than made
		 * again: blk_mq_map_swqueue() gives a shared queue the type
		 * of the first map that reaches it, and a CPU going offline
		 * between two deals would make the maps differ.
		 */
		read->nr_queues = nr_default;
		read->queue_offset = 0;
		memcpy(read->mq_map, dflt->mq_map,
		       nr_cpu_ids * sizeof(*read->mq_map));
	}

	if (opts->nr_poll_queues && nr_poll) {
		struct blk_mq_queue_map *poll = &set->map[HCTX_TYPE_POLL];

		poll->nr_queues = nr_poll;
		poll->queue_offset = nr_default + nr_read;
		blk_mq_map_queues(poll);
		nrp_map_usable_first(poll);
	}

	dev_info(ctrl->ctrl.device,
		 "mapped %u/%u/%u default/read/poll queues.\n",
		 nr_default, nr_read, nr_poll);
}

const struct blk_mq_ops nrp_io_mq_ops = {
	.queue_rq	= nrp_queue_rq,
	.commit_rqs	= nrp_commit_rqs,
	.complete	= nrp_complete_rq,
	.init_request	= nrp_init_request,
	.exit_request	= nrp_exit_request,
	.init_hctx	= nrp_init_io_hctx,
	.timeout	= nrp_timeout,
	.map_queues	= nrp_map_queues,
	.poll		= nrp_poll,
};

const struct blk_mq_ops nrp_admin_mq_ops = {
	.queue_rq	= nrp_queue_rq,
	.commit_rqs	= nrp_commit_rqs,
	.complete	= nrp_complete_rq,
	.init_request	= nrp_init_request,
	.exit_request	= nrp_exit_request,
	.init_hctx	= nrp_init_admin_hctx,
	.timeout	= nrp_timeout,
};
