// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The REPORT keys (docs/protocol.md, "Reports"). */
#include <stdio.h>
#include <string.h>
#include "common/report_keys.h"

const struct report_key_def report_keys[RK_COUNT] = {
    [RK_PROC] = {"proc", NULL, RT_WORD,
		 "the server process: up, down, hung, busy, loading, unknown"},
    [RK_PID] = {"pid", NULL, RT_INT, "the server's pid, 0 if none"},
    [RK_PROC_CHANGE_MS] = {"proc_change_ms", NULL, RT_INT,
			   "wall-clock ms of the last change of proc"},
    [RK_EXIT] = {"exit", NULL, RT_WORD, "with proc down: SIGKILL, status:N, or oom"},
    [RK_CORE_DUMPED] = {"core_dumped", NULL, RT_INT, "0/1 with a signal"},
    [RK_AUTH_ERROR] = {"auth_error", NULL, RT_WORD,
		       "the server rejected the configured credentials"},
    [RK_FENCED] = {"fenced", NULL, RT_INT, "1 while the agent holds writes paused (self-fencing)"},
    [RK_SERVER] = {"server", NULL, RT_WORD, "redis, valkey or dragonfly"},
    [RK_VERSION] = {"version", NULL, RT_WORD, "the server's version"},
    [RK_ROLE] = {"role", NULL, RT_WORD, "master, slave or unknown"},
    [RK_MASTER_HOST] = {"master_host", NULL, RT_WORD, "a replica's primary host"},
    [RK_MASTER_PORT] = {"master_port", NULL, RT_INT, "a replica's primary port"},
    [RK_MASTER_LINK_STATUS] = {"master_link_status", NULL, RT_WORD, "up or down (replicas)"},
    [RK_MASTER_LAST_IO_S] = {"master_last_io_seconds_ago", NULL, RT_INT, "-1 if unknown"},
    [RK_MASTER_SYNC_IN_PROGRESS] = {"master_sync_in_progress", NULL, RT_INT, "0/1"},
    [RK_MASTER_REPLID] = {"master_replid", NULL, RT_WORD, "the replication id this server is on"},
    [RK_REPL_OFFSET] = {"repl_offset", NULL, RT_INT, "this server's replication offset"},
    [RK_SLAVE_PRIORITY] = {"slave_priority", NULL, RT_INT, "the server's replica-priority"},
    [RK_CONNECTED_SLAVES] = {"connected_slaves", NULL, RT_INT, "on a primary"},
    [RK_RUN_ID] = {"run_id", NULL, RT_WORD, "INFO's run_id (absent on Dragonfly)"},
    [RK_LEASE] = {"lease", NULL, RT_WORD,
		  "held, lapsed, revoked (given up: the kernel deadline is past and no "
		  "answer to this report renews it) or unguarded (the server's sockets "
		  "are not marked yet: the lease silences nothing): the write lease "
		  "(absent when lease_ms = 0)"},
    [RK_LEASE_MS_LEFT] = {"lease_ms_left", NULL, RT_INT,
			  "ms until the lease runs out, 0 when lapsed"},
    [RK_LEASE_SOURCE] = {"lease_source", NULL, RT_WORD,
			 "what renewed it last: controller, peer or none"},
    [RK_LEASE_LEN] = {"lease_ms", NULL, RT_INT,
		      "the lease length the agent runs with ([agent] lease_ms as it started; "
		      "0: none): the controller waits at least this long"},
    [RK_HEARTBEAT] = {"heartbeat_ms", NULL, RT_INT,
		      "the agent's next report comes within this many ms if nothing changes "
		      "(heartbeat_ms, or replica_heartbeat_ms for a quiet replica)"},
    [RK_ADMIT_TERM] = {"admit_term", NULL, RT_INT,
		       "the term of the controller whose lease admission grant the agent runs "
		       "with (absent: none applied)"},
    [RK_ADMIT_GRANT] = {"admit_grant", NULL, RT_INT, "that grant's number"},
    [RK_ADMITTED] = {"admitted", NULL, RT_WORD,
		     "the peers whose echo replies renew its lease under that grant, "
		     "comma-separated (\"-\": none)"},
    [RK_CAUSE] =
	{"cause", NULL, RT_WORD,
	 "with proc hung or busy: stopped, busy, throttled, blocked, unresponsive, unknown"},
    [RK_THREAD_STATE] =
	{"thread_state", NULL, RT_WORD,
	 "the command thread: running, runnable, sleeping, blocked, stopped, frozen"},
    [RK_STATE_MS] = {"state_ms", NULL, RT_INT, "ms the command thread has been in thread_state"},
    [RK_WINDOW_MS] = {"window_ms", NULL, RT_INT, "the window the cause was judged over"},
    [RK_RUN_MS] = {"run_ms", NULL, RT_INT, "ms on a CPU within the window"},
    [RK_WAIT_MS] = {"wait_ms", NULL, RT_INT, "ms runnable, waiting for a CPU, within the window"},
    [RK_THROTTLED_MS] = {"throttled_ms", NULL, RT_INT,
			 "ms its cgroup was throttled within the window"},
    [RK_PEER] = {"peer.", "", RT_WORD,
		 "up, down or unknown: the agent's ICMP verdict on that peer"},
    [RK_PEER_RTT_US] = {"peer.", ".rtt_us", RT_INT, "last RTT measured in the kernel"},
    [RK_PEER_REPLY_AGE_MS] = {"peer.", ".reply_age_ms", RT_INT, "ms since the last echo reply"},
    [RK_PEER_PACKET_AGE_MS] = {"peer.", ".packet_age_ms", RT_INT,
			       "ms since any packet from the peer"},
};

const char *const report_proc_words[REPORT_PROC_WORDS] = {"unknown", "up",   "down",
							  "hung",    "busy", "loading"};

const char *report_proc_word(int p)
{
	return p >= 0 && p < REPORT_PROC_WORDS ? report_proc_words[p] : "unknown";
}

int report_proc_parse(const char *s)
{
	for (int i = 0; i < REPORT_PROC_WORDS; i++)
		if (!strcmp(s, report_proc_words[i]))
			return i;
	return 0;
}

const char *report_key_str(enum report_key k, const char *peer, char *buf, size_t len)
{
	const struct report_key_def *d = &report_keys[k];

	if (d->suffix)
		snprintf(buf, len, "%s%s%s", d->name, peer, d->suffix);
	else
		snprintf(buf, len, "%s", d->name);
	return buf;
}

int report_key_lookup(const char *str, const char **peer, size_t *peer_len)
{
	const char *dot;

	/* The first byte first: every key of every REPORT comes through here. */
	for (int i = 0; i < RK_COUNT; i++)
		if (!report_keys[i].suffix && report_keys[i].name[0] == str[0] &&
		    !strcmp(str, report_keys[i].name))
			return i;
	if (strncmp(str, report_keys[RK_PEER].name, strlen(report_keys[RK_PEER].name)))
		return -1;
	str += strlen(report_keys[RK_PEER].name);
	dot = strchr(str, '.');
	*peer = str;
	*peer_len = dot ? (size_t)(dot - str) : strlen(str);
	for (int i = 0; i < RK_COUNT; i++)
		if (report_keys[i].suffix && !strcmp(str + *peer_len, report_keys[i].suffix))
			return *peer_len ? i : -1;
	return -1;
}
