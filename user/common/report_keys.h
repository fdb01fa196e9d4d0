/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The keys of an agent's REPORT (docs/protocol.md, "Reports"): one table that the
 * agent's builder (agent/agent_events.c) and the controller's parser
 * (controller/fo_report.c) both use, so a key is spelled in one place. */
#ifndef FL_REPORT_KEYS_H
#define FL_REPORT_KEYS_H

#include <stddef.h>

enum report_key {
	RK_PROC = 0,
	RK_PID,
	RK_PROC_CHANGE_MS,
	RK_EXIT,
	RK_CORE_DUMPED,
	RK_AUTH_ERROR,
	RK_FENCED,
	RK_SERVER,
	RK_VERSION,
	RK_ROLE,
	RK_MASTER_HOST,
	RK_MASTER_PORT,
	RK_MASTER_LINK_STATUS,
	RK_MASTER_LAST_IO_S,
	RK_MASTER_SYNC_IN_PROGRESS,
	RK_MASTER_REPLID,
	RK_REPL_OFFSET,
	RK_SLAVE_PRIORITY,
	RK_CONNECTED_SLAVES,
	RK_RUN_ID,
	RK_LEASE,
	RK_LEASE_MS_LEFT,
	RK_LEASE_SOURCE,
	RK_LEASE_LEN, /* "lease_ms": the agent's lease length (controller/lease_wait.h) */
	RK_HEARTBEAT, /* "heartbeat_ms": the next report comes within this */
	/* The lease admission grant the agent runs with (controller/lease_admit.h). */
	RK_ADMIT_TERM,
	RK_ADMIT_GRANT,
	RK_ADMITTED,
	/* With proc hung or busy: why, from the scheduler (agent/srvmon.h). */
	RK_CAUSE,
	RK_THREAD_STATE,
	RK_STATE_MS,
	RK_WINDOW_MS,
	RK_RUN_MS,
	RK_WAIT_MS,
	RK_THROTTLED_MS,
	/* Per peer: "peer.<node-id>" and "peer.<node-id><suffix>". */
	RK_PEER,
	RK_PEER_RTT_US,
	RK_PEER_REPLY_AGE_MS,
	RK_PEER_PACKET_AGE_MS,
	RK_COUNT
};

enum report_type {
	RT_WORD = 0, /* a word or free text */
	RT_INT,	     /* a decimal integer */
};

struct report_key_def {
	const char *name;   /* "proc"; for per-peer keys "peer." */
	const char *suffix; /* per-peer keys: "" or ".rtt_us" …; NULL for the others */
	enum report_type type;
	const char *meaning;
};

extern const struct report_key_def report_keys[RK_COUNT];

/* The words of key `proc`, indexed like enum fo_proc and enum srv_proc. */
#define REPORT_PROC_WORDS 6
extern const char *const report_proc_words[REPORT_PROC_WORDS];
/* report_proc_words[p], "unknown" when out of range. */
const char *report_proc_word(int p);
/* The index of word s in report_proc_words, 0 ("unknown") if none. */
int report_proc_parse(const char *s);

/* The key as sent: name (and peer id and suffix for per-peer keys). Returns buf. */
const char *report_key_str(enum report_key k, const char *peer, char *buf, size_t len);
/* Which key str is; for a per-peer key, *peer and *peer_len name the node id (no '.').
 * -1 for an unknown key. */
int report_key_lookup(const char *str, const char **peer, size_t *peer_len);

#endif
