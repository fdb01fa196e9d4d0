// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* REPORT parsing: an agent's key/value arguments (docs/protocol.md, keys from
 * the table in common/report_keys.c, which the agent's builder uses too) into
 * struct fo_report. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/report_keys.h"
#include "controller/fo_internal.h"

static int parse_ll(const char *s, long long *v)
{
	const char *p = s + (*s == '-');
	long long n = 0;
	char *end;
	int i;

	/* The usual case, up to 18 digits (no overflow), without strtoll;
	 * anything else as strtoll reads it. */
	for (i = 0; i < 18 && p[i] >= '0' && p[i] <= '9'; i++)
		n = n * 10 + (p[i] - '0');
	if (i && !p[i]) {
		*v = *s == '-' ? -n : n;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* v (len bytes) into dst, cut to fit as snprintf would (no printf per key). */
static void copy_str(char *dst, size_t size, const char *v, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

static long long clamp(long long v, long long lo, long long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* One key/value pair of the table into rep. */
/* A peer key naming a node removed at runtime: noted, for the lease wait (lease_wait.h). */
static void note_removed(struct fo_cluster *c, struct fo_report *rep, const char *id)
{
	const struct fo_node *p = fo_find_removed_node(c, id);

	if (!p)
		return;
	for (int i = 0; i < rep->nremoved; i++)
		if (rep->removed_node[i] == p->idx)
			return;
	if (rep->nremoved < FO_MAX_PEERS)
		rep->removed_node[rep->nremoved++] = p->idx;
}

static void apply(struct fo_cluster *c, struct fo_report *rep, enum report_key k, const char *v,
		  size_t vlen, long long n, const char *peer)
{
	struct info_repl *r = &rep->repl;
	struct fo_node *p;

	switch (k) {
	case RK_PROC:
		rep->proc = fo_proc_parse(v);
		break;
	case RK_PID:
		rep->pid = n;
		break;
	case RK_PROC_CHANGE_MS:
		rep->proc_change_ms = n;
		break;
	case RK_EXIT:
		copy_str(rep->exit, sizeof(rep->exit), v, vlen);
		break;
	case RK_CORE_DUMPED:
		rep->core_dumped = !!n;
		break;
	case RK_FENCED:
		rep->fenced = !!n;
		break;
	case RK_AUTH_ERROR:
		copy_str(rep->auth_error, sizeof(rep->auth_error), v, vlen);
		break;
	case RK_LEASE:
		rep->lease = !strcmp(v, "held")	       ? FO_LEASE_HELD
			     : !strcmp(v, "lapsed")    ? FO_LEASE_LAPSED
			     : !strcmp(v, "revoked")   ? FO_LEASE_REVOKED
			     : !strcmp(v, "unguarded") ? FO_LEASE_UNGUARDED
						       : FO_LEASE_UNKNOWN;
		break;
	case RK_PEER_PACKET_AGE_MS:
		p = fo_find_node(c, peer);
		if (p && n >= 0)
			fo_report_set_peer_age(rep, p->idx, n);
		else if (!p)
			note_removed(c, rep, peer);
		break;
	case RK_SERVER:
		r->server = !strcmp(v, "redis")	      ? INFO_SRV_REDIS
			    : !strcmp(v, "valkey")    ? INFO_SRV_VALKEY
			    : !strcmp(v, "dragonfly") ? INFO_SRV_DRAGONFLY
						      : INFO_SRV_UNKNOWN;
		break;
	case RK_VERSION:
		copy_str(r->version, sizeof(r->version), v, vlen);
		break;
	case RK_ROLE:
		r->role = !strcmp(v, "master")				   ? INFO_ROLE_MASTER
			  : (!strcmp(v, "slave") || !strcmp(v, "replica")) ? INFO_ROLE_SLAVE
									   : INFO_ROLE_UNKNOWN;
		break;
	case RK_MASTER_HOST:
		copy_str(r->master_host, sizeof(r->master_host), v, vlen);
		break;
	case RK_MASTER_PORT:
		r->master_port = (n >= 0 && n <= 65535) ? (int)n : 0;
		break;
	case RK_MASTER_LINK_STATUS:
		r->link_up = !strcmp(v, "up") ? 1 : !strcmp(v, "down") ? 0 : -1;
		break;
	case RK_MASTER_LAST_IO_S:
		r->last_io_s = n;
		break;
	case RK_MASTER_SYNC_IN_PROGRESS:
		r->sync_in_progress = !!n;
		break;
	case RK_MASTER_REPLID:
		copy_str(r->master_replid, sizeof(r->master_replid), v, vlen);
		break;
	case RK_REPL_OFFSET:
		r->offset = n;
		break;
	case RK_SLAVE_PRIORITY:
		r->slave_priority = (int)clamp(n, 0, 1000000);
		break;
	case RK_CONNECTED_SLAVES:
		r->connected_slaves = (int)clamp(n, 0, 100000);
		break;
	case RK_RUN_ID:
		copy_str(r->run_id, sizeof(r->run_id), v, vlen);
		break;
	case RK_CAUSE:
		copy_str(rep->cause, sizeof(rep->cause), v, vlen);
		break;
	case RK_THREAD_STATE:
		copy_str(rep->thread_state, sizeof(rep->thread_state), v, vlen);
		break;
	case RK_STATE_MS:
		rep->state_ms = n;
		break;
	case RK_WINDOW_MS:
		rep->window_ms = n;
		break;
	case RK_RUN_MS:
		rep->run_ms = n;
		break;
	case RK_WAIT_MS:
		rep->wait_ms = n;
		break;
	case RK_THROTTLED_MS:
		rep->throttled_ms = n;
		break;
	case RK_LEASE_LEN:
		rep->lease_len_ms = (int)clamp(n, 0, 86400000);
		break;
	case RK_ADMIT_TERM:
		rep->admit_term = n > 0 ? n : 0;
		break;
	case RK_ADMIT_GRANT:
		rep->admit_grant = n > 0 ? n : 0;
		break;
	case RK_HEARTBEAT: /* at most a minute: a node cannot make itself never stale */
		rep->heartbeat_ms = (int)clamp(n, 0, 60000);
		break;
	case RK_PEER:
		p = fo_find_node(c, peer);
		if (p)
			fo_report_set_peer(rep, p->idx,
					   !strcmp(v, "up")	? FO_PEER_UP
					   : !strcmp(v, "down") ? FO_PEER_DOWN
								: FO_PEER_UNKNOWN);
		else
			note_removed(c, rep, peer);
		break;
	default: /* peer.X.rtt_us, lease_ms_left …: informational */
		break;
	}
}

int fo_report_parse(struct fo_cluster *c, struct fo_report *rep, int argc, const char **argv,
		    const size_t *lens, char *why, size_t whylen)
{
	struct info_repl *r = &rep->repl;

	memset(rep, 0, offsetof(struct fo_report, peer_node)); /* the arrays: by count */
	r->link_up = -1;
	r->last_io_s = -1;
	r->offset = -1;
	r->slave_priority = 100;
	rep->throttled_ms = -1;
	rep->lease_len_ms = -1;
	if (argc % 2) {
		snprintf(why, whylen, "odd number of key/value arguments");
		return -EINVAL;
	}
	for (int i = 0; i < argc; i += 2) {
		const char *key = argv[i], *v = argv[i + 1], *peer = NULL;
		size_t peer_len = 0;
		long long n = 0;
		int k;

		if (strlen(key) != lens[i] || strlen(v) != lens[i + 1]) {
			snprintf(why, whylen, "NUL byte in argument %d", i + 1);
			return -EINVAL;
		}
		k = report_key_lookup(key, &peer, &peer_len);
		if (k < 0 || (report_keys[k].suffix && k != RK_PEER && k != RK_PEER_PACKET_AGE_MS))
			continue; /* unknown (a newer agent), or informational (peer.X.rtt_us …) */
		if (report_keys[k].type == RT_INT && parse_ll(v, &n)) {
			snprintf(why, whylen, "%s: not a number: '%.32s'", key, v);
			return -EINVAL;
		}
		if (peer && peer_len) {
			char id[CFG_ID_MAX + 1];

			if (peer_len >= sizeof(id))
				continue; /* no such node */
			copy_str(id, sizeof(id), peer, peer_len);
			apply(c, rep, k, v, lens[i + 1], n, id);
			continue;
		}
		apply(c, rep, k, v, lens[i + 1], n, peer);
	}
	if (rep->proc == FO_PROC_LOADING)
		r->loading = 1;
	return 0;
}
