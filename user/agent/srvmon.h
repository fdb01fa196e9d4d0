/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The local server as the agent sees it: responsiveness (PING), replication
 * state (INFO), its pid, and the hung state machine. */
#ifndef FL_SRVMON_H
#define FL_SRVMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "common/config.h"
#include "common/info.h"
#include "common/redis_link.h"
#include "kern/sched_watch.h"

struct event_base;

/* In the order of report_proc_words (common/report_keys.h), the words of REPORT key proc. */
enum srv_proc {
	SRV_UNKNOWN = 0, /* not reached yet, or unreachable for a reason other than refusal */
	SRV_UP,		 /* answered PING */
	SRV_DOWN,	 /* process gone (BPF), or nothing listening */
	SRV_HUNG,	 /* process there, no answer for hung_after x ping_interval_ms */
	SRV_BUSY,	 /* answered -BUSY: a long script; alive */
	SRV_LOADING,	 /* answered -LOADING: loading its dataset; alive */
};
const char *srv_proc_name(enum srv_proc p);

/* Why a server does not answer, from its command thread's scheduler state
 * (bpf/sched.bpf.c) over the silence. */
enum srv_cause {
	SRV_CAUSE_NONE = 0,  /* answering */
	SRV_CAUSE_STOPPED,   /* stopped (SIGSTOP, a tracer) or frozen: hung after stop_grace_ms */
	SRV_CAUSE_BUSY,	     /* on a CPU, its runtime growing, or asleep in a timed sleep
			      * (DEBUG SLEEP): alive up to busy_max_ms */
	SRV_CAUSE_THROTTLED, /* runnable but hardly running (cpu.max, an overloaded host) */
	SRV_CAUSE_BLOCKED,   /* uninterruptible sleep (D): disk, NFS, reclaim */
	SRV_CAUSE_UNRESPONSIVE, /* asleep, not in a timed sleep, and not answering: a deadlock */
	SRV_CAUSE_UNKNOWN,	/* no scheduler state for its thread (not a local process) */
};
const char *srv_cause_name(enum srv_cause c);

/* A thread counts as busy when it ran for at least this share of the window. */
#define SRV_BUSY_MIN_SHARE_PCT 10

/* What the kernel said over the silence: the evidence a verdict carries. */
struct srv_evidence {
	uint32_t thread_state; /* enum fl_sched_state, now */
	int64_t state_ms;      /* in that state for this long */
	int64_t window_ms;     /* the window judged */
	int64_t run_ms;	       /* time on a CPU within the window */
	int64_t wait_ms;       /* time runnable, not running, within the window */
	int64_t throttled_ms; /* its cgroup's cpu.stat throttled time within the window, -1: none */
	int64_t silent_ms;    /* since the unanswered PING went out, 0: none out */
	const char *sleep_call; /* busy asleep: the timed sleep it is in ("nanosleep"), else NULL */
};

/* "nanosleep" or "clock_nanosleep" for those system calls' numbers (a sleep a
 * server chooses, in a command), NULL for any other. */
const char *srv_sleep_call(uint32_t nr);

/* The verdict on a silent server: base is its command thread's sample at the
 * start of the window, cur the sample now. Pure (unit tested). */
enum srv_cause srv_judge(const struct sched_sample *base, const struct sched_sample *cur,
			 struct srv_evidence *ev);

struct srv_state {
	enum srv_proc proc;
	int64_t proc_change_ms; /* wall clock, ms since the epoch */
	pid_t pid;		/* 0 if unknown */
	char exit_cause[32];	/* with SRV_DOWN from BPF: "SIGKILL", "status:3" */
	bool core_dumped;
	bool oom;
	bool have_info; /* info holds a parsed INFO */
	struct info_repl info;
	char auth_error[160]; /* the server's error for our AUTH, "" if none */
	/* With SRV_HUNG and SRV_BUSY: why, and what the kernel showed. */
	enum srv_cause cause;
	struct srv_evidence ev;
	bool busy_reply;      /* SRV_BUSY because it answered -BUSY (else: the kernel) */
	char busy_detail[96]; /* with cause busy after busy_max_ms: the SCRIPT KILL outcome */
};

/* Hung detection as a pure state machine, time injected (unit tested). */
struct hung_sm {
	int interval_ms;
	int hung_after;
	bool waiting; /* a PING is out */
	bool hung;
	int64_t sent_ms; /* when the PING went out (or the window restarted) */
	int64_t last_tick_ms;
};
enum hung_act { HUNG_SEND, HUNG_WAIT, HUNG_NOW_HUNG };
/* Called every interval_ms. A tick more than two intervals late means this
 * process itself stalled: the window restarts rather than judging the server. */
enum hung_act hung_tick(struct hung_sm *sm, int64_t now_ms);
void hung_sent(struct hung_sm *sm, int64_t now_ms);
/* A reply came: returns true if the server had been judged hung. */
bool hung_reply(struct hung_sm *sm);
void hung_reset(struct hung_sm *sm);

/* What changed, for srvmon_ops.changed. */
enum {
	SRV_CH_PROC = 1,  /* proc, pid */
	SRV_CH_ROLE = 2,  /* role, primary address */
	SRV_CH_REPL = 4,  /* link status, replid, priority, sync */
	SRV_CH_AUTH = 8,  /* auth_error */
	SRV_CH_INFO = 16, /* offsets and other figures only */
};

struct srvmon_ops {
	/* prev is the state before the change. */
	void (*changed)(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
			unsigned what);
	/* Optional: connected, before the first command goes out; fd is the socket. With
	 * TLS also when TCP is up, before the handshake (the write lease lets it through). */
	void (*connected)(void *ctx, int fd);
	/* Something done to the server worth a log line (kind, detail). */
	void (*note)(void *ctx, const char *kind, const char *detail);
	/* Optional: each PING's round trip, send to reply (metrics). */
	void (*ping)(void *ctx, int64_t rtt_ns);
};

struct srvmon_opts {
	struct cfg_endpoint ep;
	const char *user, *password; /* "" or NULL: no AUTH */
	const char *pidfile;	     /* optional */
	int ping_interval_ms;
	int hung_after;
	int info_interval_ms;
	int stop_grace_ms;   /* stopped or frozen this long = hung */
	int busy_max_ms;     /* busy this long: SCRIPT KILL, then hung if it cannot be killed */
	bool no_script_kill; /* shadow mode: SCRIPT KILL not sent (judged as if it failed) */
	struct sched_watch *sched; /* the kernel's scheduler state; NULL: PING alone */
	struct ssl_ctx_st *tls;	   /* [redis] tls: the server over TLS, NULL: plain */
	const char *tls_host;	   /* the name its certificate carries; NULL: ep's host */
};

struct srvmon;
struct ssl_ctx_st;
struct srvmon *srvmon_new(struct event_base *base, const struct srvmon_opts *o,
			  const struct srvmon_ops *ops, void *ctx);
void srvmon_start(struct srvmon *m);
/* The judged thread stopped or resumed (a bpf/sched.bpf.c event). */
void srvmon_sched_event(struct srvmon *m, const struct fl_sched_event *e);
/* The BPF path saw the server's process exit. */
void srvmon_exited(struct srvmon *m, pid_t pid, const char *cause, bool core_dumped, bool oom);
const struct srv_state *srvmon_state(const struct srvmon *m);
/* Sends a command on the monitor's connection; -ENOTCONN while it is down. */
int srvmon_send(struct srvmon *m, int argc, const char **argv, redis_link_reply_fn fn, void *priv);
/* A reload (agent.c): new judgement timings, and the INFO interval. */
/* Shadow mode on or off while running: SCRIPT KILL withheld or not. */
void srvmon_set_no_script_kill(struct srvmon *m, bool no);
void srvmon_set_timing(struct srvmon *m, int hung_after, int stop_grace_ms, int busy_max_ms,
		       int info_interval_ms);
/* The monitor connection's socket, -1 while down. */
int srvmon_fd(const struct srvmon *m);
void srvmon_free(struct srvmon *m);

#endif
