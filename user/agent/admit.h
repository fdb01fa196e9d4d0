/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Lease admission, the agent's side (controller/lease_admit.h has the controller's):
 * which peers' echo replies may renew the write lease. The controller's answers to
 * REPORTs carry grants (term, grant number, admitted peer ids); the newest by term
 * then number is in force, an older one is ignored (an answer of a deposed leader or
 * of a controller's previous process arriving late can never undo a grant the agent
 * has confirmed to a newer one). Until the first answer of a leader no peer counts (an
 * agent restarted while its lease still runs in the kernel cannot know what it had
 * confirmed before: only the controller, or a grant, renews it then); when that answer
 * carries no grant (an older controller) every peer of its shard counts, as without
 * admission, until one does. Each REPORT says which grant is in force (keys
 * admit_term, admit_grant, admitted). Pure logic, no I/O. */
#ifndef FL_AGENT_ADMIT_H
#define FL_AGENT_ADMIT_H

#include <stdbool.h>
#include <stddef.h>

/* A shard's nodes' ids, space-separated (64 ids of at most 64 bytes). */
#define ADMIT_LIST_MAX 4224

struct admit_set {
	bool answered; /* a leader answered (with a grant or without): peers may count */
	bool have;     /* a grant applied: only the listed peers count */
	long long term, grant;
	char ids[ADMIT_LIST_MAX + 1]; /* space-separated */
};

enum admit_change {
	ADMIT_IGNORED = 0, /* older than the one in force, or malformed: nothing changes */
	ADMIT_SAME,	   /* newer, and admits the same peers */
	ADMIT_CHANGED,	   /* the peers admitted changed */
};

/* A grant in an answer: term and grant > 0, list the admitted ids, space-separated. */
enum admit_change admit_apply(struct admit_set *s, long long term, long long grant,
			      const char *list);
/* A leader's answer without a grant (an older controller): every peer counts, unless
 * a grant was applied before. True if that changed what counts. */
bool admit_no_grant(struct admit_set *s);
/* Whether peer id's echo replies may renew the lease now. */
bool admit_has(const struct admit_set *s, const char *id);
/* The admitted ids comma-separated into buf ("-" for none, "*" for every peer without
 * a grant). Returns buf. */
const char *admit_csv(const struct admit_set *s, char *buf, size_t len);

#endif
