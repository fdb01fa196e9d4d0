/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Self-demotion (docs/security.md, TLS): an old primary that the controller
 * cannot reach turns its own server into a replica. Pure logic on an injected
 * clock; the agent sends the transaction (agent_demote.c).
 *
 * Why: with the write lease on, a server holding no lease answers only the
 * connections allowed by name, and over TLS the controller's new connection cannot
 * send its name before the server's half of the handshake, which the kernel drops.
 * So the controller cannot demote an old primary restarted after a failover; its
 * agent, whose own connection is always allowed, can.
 *
 * When (all of them): the leader's answer to a REPORT names ANOTHER node of the
 * shard primary, at an epoch not older than any answer seen; the server said
 * role:master already before that REPORT was sent (so the answer is not an old
 * one crossing a promotion of ours); the lease is not held (a primary the
 * controller still counts on, or a replica just promoted, holds it). At most once
 * per epoch and per time the server turned master (a server restarted as a master
 * again, its config not rewritten, is demoted again); after a failure, again after
 * a backoff (1 s, doubling, at most 10 s). */
#ifndef FL_AGENT_DEMOTE_H
#define FL_AGENT_DEMOTE_H

#include <stdbool.h>
#include <stdint.h>

#define DEMOTE_BACKOFF_MIN_MS 1000
#define DEMOTE_BACKOFF_MAX_MS 10000

struct demote_sm {
	long long max_epoch;  /* highest epoch of any answer seen (-1: none) */
	long long done_epoch; /* demoted at this epoch (-1: never) */
	uint64_t done_episode;
	long long try_epoch; /* the attempt in flight or last made */
	uint64_t try_episode;
	bool in_flight;
	int64_t next_try_ms; /* after a failure: not before */
	int backoff_ms;
};

struct demote_in {
	int64_t now_ms;
	long long epoch;     /* of the answer */
	const char *primary; /* the answer's primary ("" = none named) */
	const char *me;
	bool same_shard;    /* primary is a node of our shard, with an address */
	bool lease_held;    /* before this answer was applied */
	bool master_before; /* the server said role:master (and answered) before the
			     * REPORT was sent, and still does */
	uint64_t episode;   /* counts the times the server turned master */
};

void demote_init(struct demote_sm *sm);
/* A controller answer: true = send the transaction now (then demote_done). */
bool demote_on_answer(struct demote_sm *sm, const struct demote_in *in);
/* The transaction's outcome: ok = REPLICAOF said OK. */
void demote_done(struct demote_sm *sm, int64_t now_ms, bool ok);

#endif
