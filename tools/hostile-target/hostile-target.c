// SPDX-License-Identifier: GPL-2.0
/*
 * hostile-target: a user-space NVMe over Fabrics RDMA target that misbehaves
 * on purpose, to prove that the host transport survives hostile peers.
 *
 *   hostile-target -a ADDR [-p PORT] -m MODE [-n TIMES] [-d MS]
 *   hostile-target -a ADDR [-p PORT] -m alias -S SUBNQN -u UUID [-g NGUID] [-s MIB]
 *
 * It listens on ADDR:PORT (rdma_cm), accepts the host's connect (NVMe/RDMA
 * private data in both directions), receives command capsules by RECV and
 * answers each with a completion by SEND: fabrics Connect, Property Get and
 * Set (CAP, VS, CC, CSTS), Identify (a discovery controller: admin queue
 * only, MDTS 128 KiB, no namespaces), Keep Alive and Get Log Page. Data goes
 * to the host by RDMA WRITE; the completion invalidates the host's rkey
 * (SEND_WITH_INV) when the host's SGL asks for it.
 *
 * The first TIMES associations (admin queue connects, default 1)
 * misbehave as MODE says (see the table below); later ones behave, so a
 * host that recovers can reconnect. "ready" on stdout means listening;
 * every act of misbehaviour is printed as "misbehave: ...". SIGTERM or
 * SIGINT end it; the exit status is 0 unless something of ours failed.
 *
 * -m alias is no RDMA mode: an NVMe/TCP I/O controller that names another
 * subsystem than the one connected to (alias-tcp.c).
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "hostile-target.h"

enum mode {
	M_GOOD,			/* behave: the baseline */
	M_UNKNOWN_CID,		/* once live: a completion for a cid never sent */
	M_DUP_CQE,		/* Identify completed twice */
	M_SHORT_CQE,		/* Identify's completion only 8 bytes long */
	M_LONG_CQE,		/* Identify's completion longer than a CQE */
	M_BAD_INV,		/* Identify's SEND_WITH_INV names a wrong rkey */
	M_BAD_ACCEPT,		/* accept private data: bogus recfmt, crqsize 0 */
	M_REJECT_GARBAGE,	/* reject the connect with garbage private data */
	M_REJECT_STATUS,	/* reject it with a real NVMe/RDMA status */
	M_SILENT_CONNECT,	/* never answer the fabrics Connect */
	M_DISC_CONNECT,		/* disconnect instead of answering Connect */
	M_DISC_IDENTIFY,	/* disconnect instead of answering Identify */
	M_DNR_CONNECT,		/* Connect fails with DNR set */
	M_DNR_RECONNECT,	/* live, drop the link, then DNR on reconnect */
	M_FLOOD,		/* once live: a flood of unsolicited completions */
	M_FAKE_AEN,		/* once live: an async event nobody asked for */
	M_AEN_STORM,		/* answer AEN_STORM_COUNT AERs at once, no pause */
	M_ALIAS,		/* NVMe/TCP: Identify names another subsystem */
	M_COUNT
};

static const char *const mode_names[M_COUNT] = {
	[M_GOOD]		= "good",
	[M_UNKNOWN_CID]		= "unknown-cid",
	[M_DUP_CQE]		= "dup-cqe",
	[M_SHORT_CQE]		= "short-cqe",
	[M_LONG_CQE]		= "long-cqe",
	[M_BAD_INV]		= "bad-inv",
	[M_BAD_ACCEPT]		= "bad-accept",
	[M_REJECT_GARBAGE]	= "reject-garbage",
	[M_REJECT_STATUS]	= "reject-status",
	[M_SILENT_CONNECT]	= "silent-connect",
	[M_DISC_CONNECT]	= "disconnect-connect",
	[M_DISC_IDENTIFY]	= "disconnect-identify",
	[M_DNR_CONNECT]		= "dnr-connect",
	[M_DNR_RECONNECT]	= "dnr-reconnect",
	[M_FLOOD]		= "flood",
	[M_FAKE_AEN]		= "fake-aen",
	[M_AEN_STORM]		= "aen-storm",
	[M_ALIAS]		= "alias",
};

#define RQ_DEPTH	128		/* our receive queue: crqsize */
#define SQ_DEPTH	256
#define RX_SIZE		8256		/* a capsule with 8 KiB in-capsule data */
#define TX_SIZE		64		/* a CQE, or an oversized one */
#define DATA_SIZE	8192
#define CQE_SIZE	16
#define FLOOD_COUNT	200
/* several times the host's admin send CQ: 3 x 32 + 1 entries */
#define AEN_STORM_COUNT	400
/* a discovery log page change notice: type 2, info 0xf0, log page 0x70 */
#define AEN_DISC_CHANGE	0x0070f002

#define NVME_FABRICS_OP		0x7f
#define NVMF_PROP_SET		0x00
#define NVMF_CONNECT		0x01
#define NVMF_PROP_GET		0x04
#define NVME_ADM_GET_LOG	0x02
#define NVME_ADM_IDENTIFY	0x06
#define NVME_ADM_KEEP_ALIVE	0x18
#define NVME_ADM_SET_FEATURES	0x09
#define NVME_ADM_ASYNC_EVENT	0x0c
#define NVME_AER_CID		31	/* the host's async event command id */

/* status as the host's nvme core sees it (the wire value shifted right) */
#define SC_INVALID_OPCODE	0x001
#define SC_CONNECT_INVALID_HOST	0x184
#define SC_DNR			0x4000

#define DISC_NQN	"nqn.2014-08.org.nvmexpress.discovery"

struct conn {
	struct rdma_cm_id	*id;
	struct ibv_cq		*cq;
	struct ibv_mr		*rx_mr, *tx_mr, *data_mr;
	uint8_t			*rx, *tx, *data;
	int			qid;
	int			assoc;		/* admin queue connect number */
	int			misbehave;	/* this association misbehaves */
	int			gone;		/* disconnected: post nothing */
	unsigned int		tx_next;
	int			outstanding;	/* send WRs not yet completed */
	uint16_t		cntlid;
	uint32_t		cc;
	double			act_at;		/* when the live-phase act runs */
	int			flood_left;
	int			aen_left;	/* aen-storm: events still to send */
	struct conn		*next;
};

static enum mode mode;
static int times = 1;
static int act_delay_ms = 1000;
static int assocs;
static struct ibv_pd *pd;
static struct ibv_comp_channel *comp_ch;
static struct conn *conns;
static int stop;
static int failed;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* NVMe and its fabrics are little endian, whatever the CPU */
uint16_t get16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static void on_sigterm(int sig)
{
	(void)sig;
	stop = 1;
}

static int post_recv(struct conn *c, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr	= (uintptr_t)(c->rx + slot * RX_SIZE),
		.length	= RX_SIZE,
		.lkey	= c->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id		= slot,
		.sg_list	= &sge,
		.num_sge	= 1,
	}, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
}

/* Post one signaled send WR; wr_id ~0 marks sends (receives are slots). */
static int post_send(struct conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret;

	if (c->gone || c->outstanding >= SQ_DEPTH - 2)
		return -1;
	wr->wr_id = ~0ULL;
	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(c->id->qp, wr, &bad);
	if (ret) {
		say("posting a send failed: %s", strerror(ret));
		return -1;
	}
	c->outstanding++;
	return 0;
}

/*
 * A completion capsule: @len bytes (CQE_SIZE normally) with command id
 * @cid and host-view status @sts; invalidate @inv_key with it if nonzero.
 */
static int send_cqe(struct conn *c, uint16_t cid, uint16_t sts,
		    uint64_t result, uint32_t inv_key, int inv, uint32_t len)
{
	uint8_t *b = c->tx + (c->tx_next++ % SQ_DEPTH) * TX_SIZE;
	struct ibv_sge sge = {
		.addr	= (uintptr_t)b,
		.length	= len,
		.lkey	= c->tx_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= inv ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND,
	};

	memset(b, 0, TX_SIZE);
	put64(b, result);
	put16(b + 8, 0);			/* sq_head */
	put16(b + 10, c->qid);			/* sq_id */
	put16(b + 12, cid);
	put16(b + 14, sts << 1);		/* phase bit 0 */
	if (len > CQE_SIZE)
		memset(b + CQE_SIZE, 0xa5, len - CQE_SIZE);
	if (inv)
		wr.invalidate_rkey = inv_key;
	return post_send(c, &wr);
}

static int rdma_write(struct conn *c, uint64_t addr, uint32_t key,
		      uint32_t len)
{
	struct ibv_sge sge = {
		.addr	= (uintptr_t)c->data,
		.length	= len,
		.lkey	= c->data_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IBV_WR_RDMA_WRITE,
		.wr.rdma	= { .remote_addr = addr, .rkey = key },
	};

	return post_send(c, &wr);
}

/* The Identify Controller data of our discovery controller. */
static void fill_identify(struct conn *c, uint8_t *d)
{
	memset(d, 0, 4096);
	put16(d + 0, 0x1b36);			/* vid */
	memcpy(d + 4, "HOSTILE0000000000001", 20);	/* sn */
	memset(d + 24, ' ', 40);
	memcpy(d + 24, "nvme-rdma-p2p hostile-target", 28);	/* mn */
	memcpy(d + 64, "1.0     ", 8);	/* fr */
	d[77] = 5;				/* mdts: 32 pages, 128 KiB */
	put16(d + 78, c->cntlid);
	put32(d + 80, 0x00010300);		/* ver 1.3 */
	d[111] = 2;				/* cntrltype: discovery */
	put16(d + 320, 100);			/* kas: 10 s */
	d[512] = 0x66;				/* sqes */
	d[513] = 0x44;				/* cqes */
	/* aen-storm: discovery log change notices, so the host sends AERs */
	if (mode == M_AEN_STORM && c->misbehave)
		put32(d + 92, 1U << 31);	/* oaes */
	put16(d + 514, 32);			/* maxcmd */
	put32(d + 516, 0);			/* nn */
	put32(d + 536, 1 << 2 | 1 << 0);	/* sgls: keyed */
	memcpy(d + 768, DISC_NQN, sizeof(DISC_NQN));	/* subnqn */
	put32(d + 1792, 4);			/* ioccsz: 64 bytes */
	put32(d + 1796, 1);			/* iorcsz */
	d[1803] = 1;				/* msdbd */
}

static uint64_t prop_get(struct conn *c, uint32_t off)
{
	switch (off) {
	case 0x00:	/* CAP: MQES 31, CQR, TO 5 s, CSS NVM */
		return 31 | 1ULL << 16 | 10ULL << 24 | 1ULL << 37;
	case 0x08:	/* VS */
		return 0x00010300;
	case 0x14:	/* CC */
		return c->cc;
	case 0x1c:	/* CSTS: RDY follows EN, shutdown completes at once */
		return (c->cc & 1) | ((c->cc >> 14) & 3 ? 2 << 2 : 0);
	default:
		return 0;
	}
}

static void drop_link(struct conn *c, const char *why)
{
	say("misbehave: drop the connection %s", why);
	rdma_disconnect(c->id);
	c->gone = 1;
}

/* Answer a command that wants data to the host (Identify, Get Log Page). */
static void answer_data(struct conn *c, const uint8_t *cmd, uint16_t cid)
{
	uint64_t addr = get64(cmd + 24);
	uint32_t len = cmd[32] | cmd[33] << 8 | cmd[34] << 16;
	uint32_t key = get32(cmd + 35);
	int inv = (cmd[39] & 0x0f) == 0x0f;	/* keyed SGL, invalidate */
	int ident = cmd[0] == NVME_ADM_IDENTIFY;
	int bad = ident && c->misbehave;

	if (ident && cmd[40] == 1)
		fill_identify(c, c->data);
	else
		memset(c->data, 0, DATA_SIZE);
	if (len > DATA_SIZE)
		len = DATA_SIZE;

	if (bad && mode == M_DISC_IDENTIFY) {
		drop_link(c, "instead of answering Identify");
		return;
	}
	if (len && rdma_write(c, addr, key, len))
		return;

	if (!bad) {
		send_cqe(c, cid, 0, 0, key, inv, CQE_SIZE);
		return;
	}
	switch (mode) {
	case M_DUP_CQE:
		/*
		 * Without invalidation: the host must invalidate its rkey
		 * itself, and the second completion arrives while the
		 * command still waits for that, not yet complete.
		 */
		say("misbehave: Identify cid %#x completed twice", cid);
		send_cqe(c, cid, 0, 0, 0, 0, CQE_SIZE);
		send_cqe(c, cid, 0, 0, 0, 0, CQE_SIZE);
		break;
	case M_SHORT_CQE:
		say("misbehave: Identify cid %#x completion of 8 bytes", cid);
		send_cqe(c, cid, 0, 0, key, inv, 8);
		break;
	case M_LONG_CQE:
		say("misbehave: Identify cid %#x completion of %d bytes", cid, TX_SIZE);
		send_cqe(c, cid, 0, 0, key, inv, TX_SIZE);
		break;
	case M_BAD_INV:
		say("misbehave: Identify cid %#x invalidates rkey %#x, not %#x",
		    cid, key ^ 0x80, key);
		send_cqe(c, cid, 0, 0, key ^ 0x80, 1, CQE_SIZE);
		break;
	case M_UNKNOWN_CID:
	case M_FLOOD:
	case M_DNR_RECONNECT:
	case M_FAKE_AEN:
		/* the controller goes live first; the act follows */
		send_cqe(c, cid, 0, 0, key, inv, CQE_SIZE);
		c->act_at = now() + act_delay_ms / 1e3;
		break;
	default:
		send_cqe(c, cid, 0, 0, key, inv, CQE_SIZE);
		break;
	}
}

static void handle_connect(struct conn *c, const uint8_t *cmd, uint16_t cid)
{
	uint16_t qid = get16(cmd + 42);

	if (c->misbehave) {
		switch (mode) {
		case M_SILENT_CONNECT:
			say("misbehave: Connect cid %#x left unanswered", cid);
			return;
		case M_DISC_CONNECT:
			drop_link(c, "instead of answering Connect");
			return;
		case M_DNR_CONNECT:
			say("misbehave: Connect cid %#x fails with DNR", cid);
			send_cqe(c, cid, SC_CONNECT_INVALID_HOST | SC_DNR, 0, 0, 0,
				 CQE_SIZE);
			return;
		default:
			break;
		}
	}
	/* the second association of dnr-reconnect refuses for good */
	if (mode == M_DNR_RECONNECT && c->assoc > 1 && c->assoc <= times + 1) {
		say("misbehave: reconnect Connect cid %#x fails with DNR", cid);
		send_cqe(c, cid, SC_CONNECT_INVALID_HOST | SC_DNR, 0, 0, 0, CQE_SIZE);
		return;
	}
	say("connect qid %u cntlid %u", qid, c->cntlid);
	send_cqe(c, cid, 0, qid ? 0 : c->cntlid, 0, 0, CQE_SIZE);
}

static void handle_cmd(struct conn *c, const uint8_t *cmd, uint32_t len)
{
	uint16_t cid = get16(cmd + 2);

	if (len < 64) {
		say("short capsule of %u bytes", len);
		failed = 1;
		return;
	}
	if (cmd[0] == NVME_FABRICS_OP) {
		switch (cmd[4]) {
		case NVMF_CONNECT:
			handle_connect(c, cmd, cid);
			return;
		case NVMF_PROP_SET:
			if (get32(cmd + 44) == 0x14)
				c->cc = get64(cmd + 48);
			send_cqe(c, cid, 0, 0, 0, 0, CQE_SIZE);
			return;
		case NVMF_PROP_GET:
			send_cqe(c, cid, 0, prop_get(c, get32(cmd + 44)), 0, 0,
				 CQE_SIZE);
			return;
		default:
			send_cqe(c, cid, SC_INVALID_OPCODE | SC_DNR, 0, 0, 0,
				 CQE_SIZE);
			return;
		}
	}
	switch (cmd[0]) {
	case NVME_ADM_IDENTIFY:
	case NVME_ADM_GET_LOG:
		answer_data(c, cmd, cid);
		return;
	case NVME_ADM_KEEP_ALIVE:
	case NVME_ADM_SET_FEATURES:
		send_cqe(c, cid, 0, 0, 0, 0, CQE_SIZE);
		return;
	case NVME_ADM_ASYNC_EVENT:
		/*
		 * aen-storm: answered at once, AEN_STORM_COUNT times, each
		 * with an event the host only notes (no admin command of its
		 * own follows one). Otherwise held: there never is an event.
		 */
		if (c->aen_left > 0) {
			c->aen_left--;
			send_cqe(c, cid, 0, AEN_DISC_CHANGE, 0, 0, CQE_SIZE);
			if (!c->aen_left)
				say("misbehave: aen-storm: %d async events answered back to back",
				    AEN_STORM_COUNT);
		}
		return;
	default:
		send_cqe(c, cid, SC_INVALID_OPCODE | SC_DNR, 0, 0, 0, CQE_SIZE);
		return;
	}
}

/* The live-phase act of unknown-cid, flood and dnr-reconnect. */
static void live_act(struct conn *c)
{
	c->act_at = 0;
	switch (mode) {
	case M_UNKNOWN_CID:
		/*
		 * Generation 0xf of tag 30: the admin queue's last tag, which
		 * a discovery controller never uses (tags from 31 on are the
		 * host's async event requests).
		 */
		say("misbehave: completion for unknown cid 0xf01e");
		send_cqe(c, 0xf01e, 0, 0, 0, 0, CQE_SIZE);
		break;
	case M_FLOOD:
		say("misbehave: flood of %d unsolicited completions", FLOOD_COUNT);
		c->flood_left = FLOOD_COUNT;
		break;
	case M_DNR_RECONNECT:
		drop_link(c, "of a live controller");
		break;
	case M_FAKE_AEN:
		/* a discovery controller without OAES gets no AER to answer */
		say("misbehave: async event completion, cid %#x, none asked for",
		    NVME_AER_CID);
		send_cqe(c, NVME_AER_CID, 0, 0x00010002, 0, 0, CQE_SIZE);
		break;
	default:
		break;
	}
}

static void flood_some(struct conn *c)
{
	while (c->flood_left > 0 && !c->gone &&
	       c->outstanding < SQ_DEPTH / 2) {
		/* any generation of the admin queue's command tags */
		if (send_cqe(c, (rand() & 0xf000) | rand() % 31, 0, 0, 0, 0,
			     CQE_SIZE))
			break;
		c->flood_left--;
	}
}

static void poll_cq(struct conn *c)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == ~0ULL) {
				c->outstanding--;
				if (wc[i].status != IBV_WC_SUCCESS && !c->gone) {
					say("send failed: %s",
					    ibv_wc_status_str(wc[i].status));
					c->gone = 1;
				}
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				c->gone = 1;
				continue;
			}
			if (!c->gone)
				handle_cmd(c, c->rx + wc[i].wr_id * RX_SIZE,
					   wc[i].byte_len);
			if (!c->gone && post_recv(c, wc[i].wr_id))
				c->gone = 1;
		}
	}
}

static void conn_free(struct conn *c)
{
	struct conn **p;

	for (p = &conns; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->rx_mr)
		ibv_dereg_mr(c->rx_mr);
	if (c->tx_mr)
		ibv_dereg_mr(c->tx_mr);
	if (c->data_mr)
		ibv_dereg_mr(c->data_mr);
	free(c->rx);
	free(c->tx);
	free(c->data);
	rdma_destroy_id(c->id);
	free(c);
}

static void send_reject(struct rdma_cm_id *id, int garbage)
{
	uint8_t rej[32];
	unsigned int i;

	if (garbage) {
		for (i = 0; i < sizeof(rej); i++)
			rej[i] = 0xd0 + i * 7;
		say("misbehave: reject with garbage private data");
	} else {
		memset(rej, 0, sizeof(rej));
		put16(rej + 2, 0x04);	/* NVME_RDMA_CM_INVALID_HSQSIZE */
		say("misbehave: reject with NVMe/RDMA status 4 (invalid host SQ size)");
	}
	rdma_reject(id, rej, sizeof(rej));
	rdma_destroy_id(id);
}

static void on_connect_request(struct rdma_cm_id *id, const uint8_t *priv,
			       int priv_len)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	uint8_t rep[32] = { 0 };
	struct conn *c;
	unsigned int i;
	int qid = priv_len >= 8 ? get16(priv + 2) : -1;
	int misbehave;

	if (qid)
		goto out_reject;	/* admin queue only: a discovery controller */
	assocs++;
	misbehave = mode != M_GOOD && assocs <= times;
	say("connect request qid %d hrqsize %u hsqsize %u (association %d%s)",
	    qid, get16(priv + 4), get16(priv + 6), assocs,
	    misbehave ? ", misbehaving" : "");
	if (misbehave && (mode == M_REJECT_GARBAGE || mode == M_REJECT_STATUS)) {
		send_reject(id, mode == M_REJECT_GARBAGE);
		return;
	}

	if (!pd) {
		pd = ibv_alloc_pd(id->verbs);
		comp_ch = ibv_create_comp_channel(id->verbs);
		if (!pd || !comp_ch) {
			say("no PD or completion channel");
			exit(1);
		}
		fcntl(comp_ch->fd, F_SETFL, fcntl(comp_ch->fd, F_GETFL) | O_NONBLOCK);
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_reject;
	c->id = id;
	id->context = c;
	c->qid = qid;
	c->assoc = assocs;
	c->misbehave = misbehave;
	if (misbehave && mode == M_AEN_STORM)
		c->aen_left = AEN_STORM_COUNT;
	c->cntlid = 1 + assocs % 0xffe0;
	c->next = conns;
	conns = c;

	c->rx = calloc(RQ_DEPTH, RX_SIZE);
	c->tx = calloc(SQ_DEPTH, TX_SIZE);
	c->data = calloc(1, DATA_SIZE);
	c->cq = ibv_create_cq(id->verbs, RQ_DEPTH + SQ_DEPTH, c, comp_ch, 0);
	if (!c->rx || !c->tx || !c->data || !c->cq)
		goto out_free;
	ibv_req_notify_cq(c->cq, 0);
	c->rx_mr = ibv_reg_mr(pd, c->rx, RQ_DEPTH * RX_SIZE, IBV_ACCESS_LOCAL_WRITE);
	c->tx_mr = ibv_reg_mr(pd, c->tx, SQ_DEPTH * TX_SIZE, 0);
	c->data_mr = ibv_reg_mr(pd, c->data, DATA_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!c->rx_mr || !c->tx_mr || !c->data_mr)
		goto out_free;

	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = RQ_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &qa)) {
		say("rdma_create_qp: %s", strerror(errno));
		goto out_free;
	}
	for (i = 0; i < RQ_DEPTH; i++)
		if (post_recv(c, i))
			goto out_free;

	if (misbehave && mode == M_BAD_ACCEPT) {
		say("misbehave: accept with recfmt 0xbeef, crqsize 0");
		put16(rep, 0xbeef);
		put16(rep + 2, 0);
	} else {
		put16(rep, 0);			/* recfmt 1.0 */
		put16(rep + 2, RQ_DEPTH);	/* crqsize */
	}
	cp.private_data = rep;
	cp.private_data_len = sizeof(rep);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		say("rdma_accept: %s", strerror(errno));
		goto out_free;
	}
	return;

out_free:
	/* the id goes with it; the host sees the connect fail */
	failed = 1;
	conn_free(c);
	return;
out_reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static int cm_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id;
	uint8_t priv[64] = { 0 };
	int priv_len = 0;
	struct conn *c;

	if (rdma_get_cm_event(ch, &ev))
		return errno == EAGAIN ? 0 : -1;
	type = ev->event;
	id = ev->id;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data) {
		priv_len = ev->param.conn.private_data_len;
		if (priv_len > (int)sizeof(priv))
			priv_len = sizeof(priv);
		memcpy(priv, ev->param.conn.private_data, priv_len);
	}
	/* acknowledged first: destroying an id waits for its events */
	rdma_ack_cm_event(ev);
	c = type == RDMA_CM_EVENT_CONNECT_REQUEST ? NULL : id->context;

	switch (type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_connect_request(id, priv, priv_len);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (c) {
			say("association %d: %s", c->assoc, rdma_event_str(type));
			if (!c->gone)
				rdma_disconnect(id);
			c->gone = 1;
			poll_cq(c);
			conn_free(c);
		}
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		say("device removed");
		stop = 1;
		break;
	default:
		break;
	}
	return 0;
}

static void help(void)
{
	int i;

	fprintf(stderr,
		"usage: hostile-target -a ADDR [-p PORT] -m MODE [-n TIMES] [-d MS]\n"
		"       hostile-target -a ADDR [-p PORT] -m alias -S SUBNQN -u UUID [-g NGUID] [-s MIB]\nmodes:");
	for (i = 0; i < M_COUNT; i++)
		fprintf(stderr, " %s", mode_names[i]);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "4420", *mname = "good";
	const char *subnqn = NULL, *uuid = NULL, *nguid = NULL;
	int mib = 64;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE }, *ai;
	struct sigaction sa = { .sa_handler = on_sigterm };
	struct conn *c, *n;
	int opt, i;

	while ((opt = getopt(argc, argv, "a:p:m:n:d:S:u:g:s:")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'm':
			mname = optarg;
			break;
		case 'n':
			times = atoi(optarg);
			break;
		case 'd':
			act_delay_ms = atoi(optarg);
			break;
		case 'S':
			subnqn = optarg;
			break;
		case 'u':
			uuid = optarg;
			break;
		case 'g':
			nguid = optarg;
			break;
		case 's':
			mib = atoi(optarg);
			break;
		default:
			help();
		}
	}
	if (!addr)
		help();
	for (i = 0; i < M_COUNT; i++)
		if (!strcmp(mname, mode_names[i]))
			break;
	if (i == M_COUNT)
		help();
	mode = i;
	srand(getpid());
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mode == M_ALIAS)
		return alias_main(addr, port, subnqn, uuid, nguid, mib);

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "bad address %s port %s\n", addr, port);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, ai->ai_addr) || rdma_listen(listen_id, 16)) {
		perror("rdma_cm listen");
		return 1;
	}
	freeaddrinfo(ai);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	say("ready: mode %s on %s:%s, misbehaving %d time(s)", mname, addr, port, times);

	while (!stop) {
		struct pollfd fds[2] = {
			{ .fd = ch->fd, .events = POLLIN },
			{ .fd = comp_ch ? comp_ch->fd : -1, .events = POLLIN },
		};
		int busy = 0;

		for (c = conns; c; c = c->next)
			busy |= c->act_at > 0 || c->flood_left > 0;
		poll(fds, 2, busy ? 20 : 200);

		while (fds[0].revents && !cm_event(ch) && !stop) {
			struct pollfd p = { .fd = ch->fd, .events = POLLIN };

			if (poll(&p, 1, 0) <= 0)
				break;
		}
		if (comp_ch) {
			struct ibv_cq *cq;
			void *ctx;

			while (!ibv_get_cq_event(comp_ch, &cq, &ctx)) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
		}
		for (c = conns; c; c = n) {
			n = c->next;
			poll_cq(c);
			if (c->act_at > 0 && now() >= c->act_at && !c->gone)
				live_act(c);
			flood_some(c);
		}
	}

	for (c = conns; c; c = n) {
		n = c->next;
		if (!c->gone)
			rdma_disconnect(c->id);
		conn_free(c);
	}
	rdma_destroy_id(listen_id);
	if (comp_ch)
		ibv_destroy_comp_channel(comp_ch);
	if (pd)
		ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	say("done");
	return failed;
}
