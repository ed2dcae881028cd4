// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: describing a command's data to the target.
 *
 * In order of preference for a request with data:
 *   - in-capsule: small writes on I/O queues travel inside the SEND, the
 *     data SGEs right behind the command (SGL offset descriptor);
 *   - global rkey: one contiguous segment, only with register_always=N;
 *   - FRWR: register the pages in the MR of the command's tag under a new
 *     key and hand that rkey to the target (keyed SGL descriptor),
 *     invalidated when the command ends.
 * A request without data gets a null keyed descriptor.
 *
 * Pages may be PCI P2PDMA memory (a BAR of another PCI device). Those
 * need the P2P-aware mapping, which can also tell that the RDMA device
 * cannot reach the peer at all (-EREMOTEIO). The policy, per request:
 *   - one P2P page is enough to map the whole request with the P2P-aware
 *     mapping, which maps every segment by its own kind: host pages as
 *     usual, P2P pages to bus or host-bridge addresses. A request mixing
 *     both is therefore served, and the counters split its bytes by kind;
 *   - all or nothing: if the device cannot reach one P2P page, the whole
 *     request fails with -EREMOTEIO, host pages included, and nothing of
 *     it goes on the wire;
 *   - P2P segments take the same routes as host ones, in-capsule data
 *     included: a SEND's SGE with the local DMA lkey makes the device read
 *     the peer memory itself, so nothing is copied on the way.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/dma-mapping.h>

#include "nrp.h"	/* with the unaligned accessors, by nrp_compat.h */
#include "nrp_trace.h"

void nrp_set_null_sgl(struct nvme_command *cmd)
{
	struct nvme_keyed_sgl_desc *desc = &cmd->common.dptr.ksgl;

	desc->addr = 0;
	put_unaligned_le24(0, desc->length);
	put_unaligned_le32(0, desc->key);
	desc->type = NVME_KEY_SGL_FMT_DATA_DESC << 4;
}

/* The mapped part of the request's table, as the sgtable helpers want it. */
static struct sg_table nrp_mapped_view(struct nrp_request *req)
{
	struct sg_table view = {
		.sgl		= req->sgt.sgl,
		.orig_nents	= req->nents,
	};

	return view;
}

/*
 * The entry after @sg of a mapped table (NULL after its last), like
 * sg_next() but inline: the walks below run on every command, and the
 * out-of-line sg_next() is a call per segment (one more after the last
 * one) where a contiguous table needs an increment.
 */
static inline struct scatterlist *nrp_sg_next(struct scatterlist *sg)
{
	if (sg_is_last(sg))
		return NULL;
	sg++;
	if (unlikely(sg_is_chain(sg)))
		sg = sg_chain_ptr(sg);
	return sg;
}

/* Bytes of P2P memory in the request; counts their segments in @segs. */
static u32 nrp_p2p_bytes(struct nrp_request *req, u32 *segs)
{
	struct scatterlist *sg;
	u32 bytes = 0;
	int i;

	*segs = 0;
	if (!nrp_kernel_has_p2pdma())
		return 0;
	for (sg = req->sgt.sgl, i = 0; i < req->nents;
	     i++, sg = nrp_sg_next(sg)) {
		if (nrp_is_p2p_page(sg_page(sg))) {
			bytes += sg->length;
			(*segs)++;
		}
	}
	return bytes;
}

static int nrp_dma_map_p2p(struct nrp_queue *queue, struct nrp_request *req,
			   enum dma_data_direction dir, int *count)
{
	struct ib_device *ibdev = queue->dev->ibdev;
	struct sg_table view = nrp_mapped_view(req);
	int ret;

	/*
	 * What this association decided (nrp_ibdev_p2p_ok() when its admin
	 * queue came up), not allow_soft_p2p as it is now: a change of it
	 * takes effect at the next association, for the queues, the paths and
	 * the heads alike.
	 */
	if (!READ_ONCE(queue->ctrl->p2p_capable))
		return -EREMOTEIO;

	ret = nrp_ib_map_sgtable(ibdev, &view, dir);
	if (ret) {
		/* everything but "unreachable" is a mapping failure */
		if (ret != -EREMOTEIO && ret != -ENOMEM)
			ret = -EIO;
		return ret;
	}
	*count = view.nents;
	return 0;
}

/*
 * The request's scatterlist for @nents entries. Most requests fit in the
 * NVME_INLINE_SG_CNT entries behind the request: those are cleared and
 * terminated here, which is all sg_alloc_table_chained() does for them,
 * but inline (no call, and a few stores instead of the out-of-line
 * memset() of sg_init_table()). Larger ones chain tables
 * from the sg pools through it.
 */
static int nrp_sg_table_init(struct nrp_request *req, unsigned int nents)
{
	unsigned int i;

	req->sgt.sgl = req->first_sgl;
	if (nents > NVME_INLINE_SG_CNT)
		return sg_alloc_table_chained(&req->sgt, nents, req->first_sgl,
					      NVME_INLINE_SG_CNT);
	for (i = 0; i < NVME_INLINE_SG_CNT; i++)
		req->first_sgl[i] = (struct scatterlist){};
	sg_mark_end(&req->first_sgl[nents - 1]);
	req->sgt.nents = nents;
	req->sgt.orig_nents = nents;
	return 0;
}

/* Undo nrp_sg_table_init(): only a chained table has anything to free. */
static void nrp_sg_table_free(struct nrp_request *req)
{
	if (req->sgt.orig_nents > NVME_INLINE_SG_CNT)
		sg_free_table_chained(&req->sgt, NVME_INLINE_SG_CNT);
}

void nrp_dma_unmap(struct nrp_queue *queue, struct request *rq)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	struct ib_device *ibdev = queue->dev->ibdev;

	if (req->dma_kind == NRP_DMA_P2P) {
		struct sg_table view = nrp_mapped_view(req);

		nrp_ib_unmap_sgtable(ibdev, &view, rq_dma_dir(rq));
	} else {
		ib_dma_unmap_sg(ibdev, req->sgt.sgl, req->nents,
				rq_dma_dir(rq));
	}
	nrp_sg_table_free(req);
	req->dma_kind = NRP_DMA_NONE;
}

/* Build and DMA-map the scatterlist; returns the DMA segment count. */
static int nrp_dma_map(struct nrp_queue *queue, struct request *rq,
		       int *count)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	enum dma_data_direction dir = rq_dma_dir(rq);
	u32 p2p_bytes, p2p_segs;
	int ret;

	ret = nrp_sg_table_init(req, blk_rq_nr_phys_segments(rq));
	if (ret)
		return -ENOMEM;

	/*
	 * The table keeps the size it was allocated with (freeing it walks
	 * that many entries); the mapped length is kept in ->nents.
	 */
	req->nents = nrp_rq_map_sg(rq, req->sgt.sgl);

	p2p_bytes = nrp_p2p_bytes(req, &p2p_segs);
	if (unlikely(p2p_segs)) {
		ret = nrp_dma_map_p2p(queue, req, dir, count);
		if (ret)
			goto out_free_table;
		req->dma_kind = NRP_DMA_P2P;
		nrp_qstat_add(queue, NRP_STAT_P2P_BYTES, p2p_bytes);
		nrp_qstat_add(queue, NRP_STAT_P2P_SEGMENTS, p2p_segs);
		/* a mixed request: the rest came from host memory */
		if (blk_rq_payload_bytes(rq) > p2p_bytes)
			nrp_qstat_add(queue, NRP_STAT_HOST_BYTES,
				      blk_rq_payload_bytes(rq) - p2p_bytes);
		trace_nrp_map(queue, rq, true, *count, p2p_bytes, p2p_segs);
		return 0;
	}

	*count = ib_dma_map_sg(queue->dev->ibdev, req->sgt.sgl, req->nents,
			       dir);
	if (unlikely(*count <= 0)) {
		ret = -EIO;
		goto out_free_table;
	}
	req->dma_kind = NRP_DMA_HOST;
	nrp_qstat_add(queue, NRP_STAT_HOST_BYTES, blk_rq_payload_bytes(rq));
	trace_nrp_map(queue, rq, false, *count, 0, 0);
	return 0;

out_free_table:
	nrp_sg_table_free(req);
	return ret;
}

static void nrp_map_inline(struct nrp_queue *queue, struct nrp_request *req,
			   struct nvme_command *cmd, int count)
{
	struct nvme_sgl_desc *desc = &cmd->common.dptr.sgl;
	struct ib_sge *sge = &req->sge[1];
	struct scatterlist *sg;
	u32 len = 0;
	int i;

	for (sg = req->sgt.sgl, i = 0; i < count; i++, sg = nrp_sg_next(sg)) {
		sge->addr = sg_dma_address(sg);
		sge->length = sg_dma_len(sg);
		sge->lkey = queue->dev->pd->local_dma_lkey;
		len += sge->length;
		sge++;
	}
	req->num_sge += count;

	/* the data starts icdoff bytes into the in-capsule data area */
	desc->addr = cpu_to_le64(queue->ctrl->ctrl.icdoff);
	desc->length = cpu_to_le32(len);
	desc->type = (NVME_SGL_FMT_DATA_DESC << 4) | NVME_SGL_FMT_OFFSET;

	nrp_qstat_inc(queue, NRP_STAT_INLINE_WRITES);
	nrp_qstat_add(queue, NRP_STAT_INLINE_BYTES, len);
}

static void nrp_map_global_rkey(struct nrp_queue *queue,
				struct nrp_request *req,
				struct nvme_command *cmd)
{
	struct nvme_keyed_sgl_desc *desc = &cmd->common.dptr.ksgl;

	desc->addr = cpu_to_le64(sg_dma_address(req->sgt.sgl));
	put_unaligned_le24(sg_dma_len(req->sgt.sgl), desc->length);
	put_unaligned_le32(queue->dev->pd->unsafe_global_rkey, desc->key);
	desc->type = NVME_KEY_SGL_FMT_DATA_DESC << 4;

	nrp_qstat_inc(queue, NRP_STAT_GLOBAL_RKEY);
}

static int nrp_map_frwr(struct nrp_queue *queue, struct nrp_request *req,
			struct nvme_command *cmd, int count)
{
	struct nvme_keyed_sgl_desc *desc = &cmd->common.dptr.ksgl;
	u32 tag = blk_mq_rq_from_pdu(req)->tag;
	struct ib_mr *mr;
	int mapped;

	/* the queue has an MR for every tag its tag set can hand out */
	if (WARN_ON_ONCE(tag >= queue->nr_tag_mrs))
		return -EINVAL;
	/*
	 * The tag's MR is missing only after a drain deregistered it: the
	 * queue is about to be rebuilt, and the request waits for that.
	 */
	mr = queue->tag_mrs[tag];
	if (unlikely(!mr))
		return -EAGAIN;

	/*
	 * 4K MR pages match the NVMe controller page size, which is also
	 * the virt boundary the core gives the request queue.
	 */
	mapped = ib_map_mr_sg(mr, req->sgt.sgl, count, NULL, SZ_4K);
	if (unlikely(mapped < count))
		return mapped < 0 ? mapped : -EINVAL;

	/* a new key per use, so a stale rkey held by the target is dead */
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	req->mr = mr;

	/* the rest of reg_wr is set once, in nrp_init_request() */
	req->reg_wr.mr = mr;
	req->reg_wr.key = mr->rkey;

	desc->addr = cpu_to_le64(mr->iova);
	put_unaligned_le24(mr->length, desc->length);
	put_unaligned_le32(mr->rkey, desc->key);
	desc->type = NVME_KEY_SGL_FMT_DATA_DESC << 4;
	/* ask the target to kill the rkey with its response (SEND_WITH_INV) */
	if (likely(READ_ONCE(queue->ctrl->remote_inv)))
		desc->type |= NVME_SGL_FMT_INVALIDATE;

	nrp_qstat_inc(queue, NRP_STAT_FRWR_REGS);
	return 0;
}

/*
 * Fill the data pointer of @cmd and the request's extra WRs/SGEs. On
 * failure nothing stays mapped; -EREMOTEIO means P2P memory the device
 * cannot reach.
 */
int nrp_map_data(struct nrp_queue *queue, struct request *rq,
		 struct nvme_command *cmd)
{
	struct nrp_request *req = blk_mq_rq_to_pdu(rq);
	struct nrp_device *dev = queue->dev;
	int count, ret;

	req->num_sge = 1;
	req->mr = NULL;
	req->dma_kind = NRP_DMA_NONE;
	/* one reference for the SEND completion, one for the response */
	refcount_set(&req->pending, 2);

	cmd->common.flags |= NVME_CMD_SGL_METABUF;

	if (!blk_rq_nr_phys_segments(rq)) {
		nrp_set_null_sgl(cmd);
		return 0;
	}

	ret = nrp_dma_map(queue, rq, &count);
	if (unlikely(ret))
		return ret;

	if (count <= dev->inline_sges) {
		if (rq_data_dir(rq) == WRITE && nrp_qid(queue) &&
		    queue->ctrl->use_inline &&
		    blk_rq_payload_bytes(rq) <= nrp_inline_capacity(queue)) {
			nrp_map_inline(queue, req, cmd, count);
			return 0;
		}

		if (count == 1 && (dev->pd->flags & IB_PD_UNSAFE_GLOBAL_RKEY)) {
			nrp_map_global_rkey(queue, req, cmd);
			return 0;
		}
	}

	ret = nrp_map_frwr(queue, req, cmd, count);
	if (unlikely(ret))
		nrp_dma_unmap(queue, rq);
	return ret;
}
