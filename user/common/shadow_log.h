/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `flatline shadow-report` without I/O: Sentinel's log lines (+sdown, +odown,
 * +switch-master, +promoted-slave) and flatline's controller events (node_down,
 * would_failover, would_promote, primary_followed) as one kind of record, and the
 * faults they make: per failed primary, what each system saw, when it acted (or
 * would have) and which replica it chose. Servers are named by address (ip:port):
 * the caller turns flatline's node ids into addresses (the cluster file). */
#ifndef FL_SHADOW_LOG_H
#define FL_SHADOW_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum sl_kind {
	SL_NONE = 0,
	/* Sentinel */
	SL_S_SDOWN,    /* +sdown master <name> <ip> <port> */
	SL_S_ODOWN,    /* +odown master <name> <ip> <port> #quorum q/n */
	SL_S_PROMOTED, /* +promoted-slave slave <ip:port> <ip> <port> @ <name> <mip> <mport> */
	SL_S_SWITCH,   /* +switch-master <name> <oldip> <oldport> <newip> <newport> */
	/* flatline (the controller's event log) */
	SL_F_DOWN,	     /* node_down */
	SL_F_WOULD_FAILOVER, /* would_failover */
	SL_F_WOULD_PROMOTE,  /* would_promote */
	SL_F_FOLLOWED,	     /* primary_followed */
	SL_F_PROMOTED,	     /* promoted (flatline active) */
};

struct sl_event {
	enum sl_kind kind;
	long long ts_ms; /* wall clock, ms since the epoch */
	char master[64]; /* Sentinel's master name, or flatline's shard */
	/* The failed primary: ip:port (Sentinel), or flatline's node id until the caller
	 * resolves it (node: the id kept). */
	char addr[160];
	/* The replica chosen: ip:port (Sentinel), flatline's node id until resolved. */
	char chosen[160];
	char node[64], chosen_node[64]; /* flatline's ids ("" for Sentinel) */
	char reason[96];		/* would_failover's reason */
};

/* One Sentinel log line ("<pid>:X 01 Dec 2026 11:50:16.123 # +sdown master m 10.0.0.1
 * 6379"); its time is read as local time (Sentinel writes no zone). 1 and *e
 * filled for an event above (a master's, not a replica's +sdown), 0 for any other
 * line, never an error: logs carry everything. */
int sl_parse_sentinel(const char *line, struct sl_event *e);
/* One line of flatline's event log (JSON): 1 for an event above, 0 otherwise. */
int sl_parse_flatline(const char *line, size_t len, struct sl_event *e);

/* A fault: one failed primary as one or both systems saw it. Times 0: not seen. */
struct sl_fault {
	char addr[160];				       /* the failed primary */
	char master[64];			       /* Sentinel's name, or flatline's shard */
	long long s_sdown_ms, s_odown_ms, s_switch_ms; /* Sentinel */
	char s_chosen[160];
	long long f_down_ms, f_would_ms, f_promote_ms, f_followed_ms; /* flatline */
	char f_chosen[160], f_reason[96];
	char f_followed[160]; /* the primary flatline followed (the servers' roles) */
};

/* Groups events (any order; sorted here by time) into faults: a failed primary's
 * events within window_ms of that fault's first are one fault. Returns how many
 * were written to out (at most max). */
int sl_faults(struct sl_event *ev, int n, long long window_ms, struct sl_fault *out, int max);

#endif
