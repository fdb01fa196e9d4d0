/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The controller's modules and what they share (private to user/controller/).
 *
 *   controller.c    start-up, discovery, TILT tick, signals, `flatline controller`;
 *                   the struct fo_ops table that wires failover.c to the modules below
 *   ctl_listen.c    the listen socket: accept, read, dispatch to ctl_on_<command>
 *   ctl_limits.c    output-buffer limits per client class, maxclients, rejection log rate
 *   ctl_agents.c    agent sessions: HELLO flatline, PROVE, REPORT, heartbeat deadlines
 *   ctl_client_auth.c  client logins: AUTH, HELLO [AUTH], what each user may run
 *   ctl_sentinel.c  the Sentinel API (SENTINEL, INFO, ROLE), FLATLINE, pub/sub, events
 *   ctl_status.c    `FLATLINE STATUS` as text and as JSON: printing only
 *   ctl_servers.c   requests to the Redis servers (the I/O behind struct fo_ops)
 *   ctl_dns.c       DNS wiring: the update after a promotion, drift check and repair
 *   ctl_ha.c        HA mode ([etcd]): leader or follower, the shard state in etcd
 *   ctl_state.c     the state file, written by a worker thread off the loop
 */
#ifndef FL_CTL_H
#define FL_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <strings.h>
#include <event2/event.h>
#include "common/acl.h"
#include "common/auth.h"
#include "common/config.h"
#include "common/event_log.h"
#include "common/metrics.h"
#include "common/resp.h"
#include "controller/controller.h"
#include "controller/dns.h"
#include "controller/failover.h"

struct evbuffer;
struct ctl_server;
struct ha;
struct ctl_state_writer;
struct ssl_ctx_st;

#define CTL_TICK_MS	       100  /* TILT check */
#define CTL_DNS_FIRST_CHECK_MS 1500 /* after the start-up INFO round (at most 1 s) */
#define CTL_DISCOVER_MS	       1000 /* the first INFO round at start */
#define CTL_RETRY_MIN_MS       100  /* reconnecting to a server */
#define CTL_RETRY_MAX_MS       1000
#define CTL_PROTO_VERSION      AUTH_PROTO_VERSION
#define CTL_MAX_SUBS	       64
#define CTL_PUBSUB_MAX_OUT     (8u << 20) /* bytes a subscriber may leave unread */
/* Limits like Redis's (issue 14), for whatever can reach the socket. */
#define CTL_MAX_CLIENTS	    10000	/* Redis's maxclients default */
#define CTL_FD_RESERVE	    64		/* descriptors kept for servers, files, DNS */
#define CTL_PREAUTH_FRAME   (64u << 10) /* largest frame before AUTH or the agent handshake */
#define CTL_PREAUTH_MS	    5000	/* a frame, or the agent handshake, begun: done by then */
#define CTL_LOGIN_MS	    10000 /* client authentication on: logged in (or an agent) by then */
#define CTL_CLOSE_FLUSH_MS  5000  /* a closing client that does not read: freed */
#define CTL_MAX_CHANNEL	    256	  /* bytes in a channel or pattern name */
#define CTL_ACCEPT_PAUSE_MS 100	  /* out of descriptors: accept again after */
#define CTL_LOG_SRC_MS	    1000  /* rejections logged per source address at most */
#define CTL_LOG_SLOTS	    256
/* What a connection that is not a proven agent gets per turn of the event loop
 * before the others get theirs (issue 25): hundreds of connections sending
 * empty lines or inline junk leave the loop turning in milliseconds. */
#define CTL_TURN_BYTES 4096

/* A client or agent connection. */
struct ctl_conn {
	struct ctl *ctl;
	struct bufferevent *bev;
	struct resp_reader *rd;
	char peer[80];
	unsigned flags;
#define CTL_C_AGENT	 (1u << 0) /* HELLO flatline accepted: node is set */
#define CTL_C_AUTH	 (1u << 1) /* AUTH with the cluster secret: may change state */
#define CTL_C_PUBSUB	 (1u << 2) /* subscribed to a channel or a pattern */
#define CTL_C_CLOSING	 (1u << 3) /* closes once its output is flushed */
#define CTL_C_WAITING	 (1u << 4) /* a FLATLINE FAILOVER answer is deferred */
#define CTL_C_RESP3	 (1u << 5) /* HELLO 3: maps, nulls and push messages */
#define CTL_C_CHALLENGED (1u << 6) /* HELLO flatline answered with CHALLENGE: PROVE next */
#define CTL_C_PENALTY	 (1u << 7) /* a failed AUTH: reading paused (with CTL_C_WAITING) */
#define CTL_C_LOGIN	 (1u << 8) /* logged in as user (client authentication on) */
#define CTL_C_TLS	 (1u << 9) /* came to tls_listen */
/* Its turn of the loop used up (CTL_TURN_BYTES): reading off, the
 * rest runs from its resume timer, after every other connection's turn. */
#define CTL_C_YIELD (1u << 10)
/* A plain socket bufferevent (not TLS): its output may be written to the fd directly. */
#define CTL_C_PLAIN (1u << 12)
/* An agent's answers are written at the end of the read callback, with the
 * bufferevent's EV_WRITE off (no epoll change per REPORT): ctl_listen.c. */
#define CTL_C_WDIRECT (1u << 13)
	int node;
	/* A plain agent connection reads with its own event, not the bufferevent's
	 * (no FIONREAD ioctl per REPORT): ctl_listen.c, ctl_conn_reading(). */
	struct event *rev;
	uint8_t na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN]; /* the handshake's nonces */
	uint8_t key[AUTH_KEY_LEN];			/* the challenged node's key */
	long long seq;
	struct event *resume;	      /* reads on after a deferred answer */
	struct event *deadline;	      /* a frame or the agent handshake begun and not finished */
	struct event *login_deadline; /* client authentication on: CTL_LOGIN_MS from accept */
	long long soft_since_ms;      /* output over the soft limit since, 0 if not */
	char *subs[CTL_MAX_SUBS];
	int nsubs;
	char *psubs[CTL_MAX_SUBS];
	int npsubs;
	struct ctl_conn *next, *prev;
	/* CLIENT ID/LIST/INFO/GETNAME/SETNAME/KILL (ctl_clients.c) */
	unsigned long long id;
	long long created_ms, last_cmd_ms;
	char name[64];
	char last_cmd[32];
	bool tls_handshake; /* on the TLS socket, handshake not done: CTL_PREAUTH_MS */
	/* Client authentication (ctl_client_auth.c): who, and the ACL_* bits allowed */
	char user[ACL_USER_MAX + 1];
	unsigned perms;
	/* A SENTINEL question held while its shard changes primary (ctl_sentinel.c) */
	struct resp_cmd held;
	struct event *hold_ev;
	long long hold_until_ms;
};

/* The DNS record of one shard as the controller knows it. */
struct ctl_dns {
	int agrees;		   /* the record is exactly the primary: 1, 0, -1 unknown */
	bool repair;		   /* the queued update is a repair (dns_repaired) */
	char seen[DNS_ADDR_MAX];   /* what the last query found ("" none) */
	long long cfg_err_ms;	   /* last configuration error (REFUSED, BADKEY …) */
	char cfg_err[DNS_ERR_MAX]; /* its text, printed once per change */
};

/* Prometheus metrics (ctl_metrics.c): what is counted as it happens; the rest is
 * read from the model at scrape time. */
#define CTL_METRICS_MAX_CAUSES 64
struct ctl_metrics {
	struct metrics *http;
	struct metrics_hist to_promotion, to_writable, dns_update; /* seconds */
	uint64_t dns_failures, rejected;
	long long *promoted_start_ms; /* per shard: the failover already observed */
	struct {
		int shard;
		char cause[32];
		char result[16];
		uint64_t n;
	} failovers[CTL_METRICS_MAX_CAUSES];
	int nfailovers;
};

struct ctl {
	struct cfg *cfg;
	struct fo_cluster fo;
	struct event_base *base;
	struct evconnlistener *lis;	/* plain: [controller] listen; NULL when TLS only */
	struct evconnlistener *tls_lis; /* [controller] tls_listen, NULL without */
	struct ssl_ctx_st *tls_ctx;	/* its certificate and the clients' CA */
	struct ssl_ctx_st *srv_tls;	/* [redis] tls: to the servers, NULL without */
	char tls_listen_str[300];
	struct evlog *log;
	char event_log[256];
	char state_file[256];
	char listen_str[300];
	char myid[41];
	long long start_ms;
	struct ctl_conn *conns;
	/* Per node (nnodes of each, allocated for the cluster file): */
	int nnodes;
	struct ctl_server **servers;   /* ctl_servers.c */
	struct event **node_timer;     /* heartbeat deadline */
	struct ctl_deadline *deadline; /* its argument */
	struct event **shard_timer;
	struct ctl_conn **waiter; /* per shard: the client waiting for FLATLINE FAILOVER */
	struct event *tick, *sigint, *sigterm;
	int discover_pending;
	bool discover_pending_round;	      /* an INFO round is out (start, or a new leader) */
	const struct cfg_endpoint *listen_ep; /* [controller] listen, or [controller "id"]'s */
	/* [controller] tls_listen, or [controller "id"]'s in HA mode; NULL = no TLS */
	const struct cfg_endpoint *tls_listen_ep;
	char ha_addr[300]; /* HA mode: the address published in etcd (plain, else TLS) */
	struct event *discover_timer;
	char (*reject_last)[160]; /* last rejection logged per node (+ one for unknown ids) */
	/* libevent common timeouts (a queue, not the heap: every node's deadline has the
	 * same length): the heartbeat deadline and an agent's read timeout, per length. */
	int deadline_ms, silent_ms;
	const struct timeval *deadline_tv, *silent_tv;
	int nconns, maxclients;
	int nheld;   /* connections with a SENTINEL question held (ctl_sentinel.c) */
	int npubsub; /* connections with CTL_C_PUBSUB */
	struct event *accept_resume; /* the listener paused on EMFILE */
	long long accept_err_ms;     /* last accept error logged */
	unsigned accept_errs;	     /* since */
	struct {
		unsigned hash;
		long long last_ms;
		unsigned suppressed;
	} log_src[CTL_LOG_SLOTS]; /* rejections logged per source address */
	struct {
		unsigned hash;
		unsigned fails;
		long long last_ms;
		long long next_ms; /* the next failed AUTH from there is answered then */
	} auth_src[CTL_LOG_SLOTS]; /* failed AUTHs per source address */
	struct dns_updater *dns;
	struct ctl_dns *dnss;	 /* per shard: what DNS says and why we last wrote it */
	struct event *dns_check; /* the drift check, every [dns] check_ms */
	struct ctl_state_writer *state_writer; /* ctl_state.c; NULL in HA mode */
	/* HA mode (ctl_ha.c): NULL without an [etcd] section */
	struct ha *ha;
	char id[CFG_ID_MAX + 1]; /* --id: this controller's [controller "id"] */
	bool was_leader;
	long long ha_role_since_ms;
	char etcd_why[256];	/* why etcd is unavailable, "" when it answers */
	char etcd_members[256]; /* etcd's member names, or why unknown */
	struct event *members_timer, *stop_timer;
	struct event *sighup;
	struct ctl_metrics m;
};

/* What status shows of HA mode. */
struct ctl_ha_view {
	bool enabled;
	const char *role, *leader, *endpoint;
	bool may_act;
	long long deadline_in_ms;
	long long revision;
	bool etcd_ok;
	const char *etcd_why, *etcd_members;
	int nctls; /* the controllers registered in etcd, this one included */
	const char *ctl_ids[CFG_MAX_CTLS * 2], *ctl_addrs[CFG_MAX_CTLS * 2];
};

/* A node's heartbeat deadline: which node, for ctl_on_node_deadline. */
struct ctl_deadline {
	struct ctl *c;
	int node;
	int agents; /* the node's authenticated agent connections */
};

#define ARG_IS(i, s) (!strcasecmp(cmd->argv[i], s))

/* controller.c */
void ctl_log(struct ctl *c, struct evrec *r);
/* The INFO round of every node, then fo_discover (at start, and for a new leader). */
void ctl_discover_start(struct ctl *c);
void ctl_discover_one_done(struct ctl *c);

/* ctl_state.c */
int ctl_state_start(struct ctl *c);
/* Hands the current state to the writer thread (returns at once). */
void ctl_state_save(struct ctl *c);
/* True while the last write failed (then buf says why). */
bool ctl_state_error(struct ctl *c, char *buf, size_t len);
/* Writes what is pending, then stops the thread. */
void ctl_state_stop(struct ctl *c);

/* ctl_ha.c */
/* May this controller act on servers and DNS now? Always without HA; in HA mode
 * only the leader, and only while its lease is surely alive. */
bool ctl_may_act(const struct ctl *c);
int ctl_ha_start(struct ctl *c);
/* A clean stop: revokes the lease, then breaks the loop (at most 1 s). */
void ctl_ha_stop(struct ctl *c);
void ctl_ha_free(struct ctl *c);
/* Writes the shard's primary and epoch to etcd (leader only). */
int ctl_ha_save(struct ctl *c, int shard);
/* <prefix>rel = val, from any controller (runtime settings: not the shard state).
 * fn gets 0 or -errno and why; returns 0 or -errno (fn then never runs). */
int ctl_ha_put_plain(struct ctl *c, const char *rel, const char *val,
		     void (*fn)(void *ctx, int err, const char *msg), void *ctx);
int ctl_ha_controllers(const struct ctl *c, const char **ids, const char **addrs, int max);
void ctl_ha_status(const struct ctl *c, struct ctl_ha_view *v);

/* ctl_listen.c */
int ctl_listen(struct ctl *c);
/* Closes the listen sockets and frees the TLS context. */
void ctl_listen_close(struct ctl *c);
void ctl_conn_fatal(struct ctl_conn *k, const char *err);
void ctl_conn_free(struct ctl_conn *k);
void ctl_conn_resume(struct ctl_conn *k);
void ctl_conn_reading(struct ctl_conn *k, bool on);
/* The event behind k->resume: reads on (after a deferred answer or a penalty). */
void ctl_conn_on_resume(evutil_socket_t fd, short what, void *arg);

/* ctl_limits.c */
/* RLIMIT_NOFILE raised, maxclients fitted under it */
void ctl_fit_clients(struct ctl *c);
/* May a rejection from peer be logged now? Once per CTL_LOG_SRC_MS per source
 * address; *suppressed: how many were not since. */
bool ctl_log_allowed(struct ctl *c, const char *peer, unsigned *suppressed);
/* Past its class's output buffer limit: the caller frees it at once. */
bool ctl_conn_over_limit(struct ctl_conn *k);

/* ctl_agents.c: RESP handlers and the session's end */
void ctl_on_hello(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_report(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_prove(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_agent_closed(struct ctl_conn *k);
void ctl_agent_timed_out(struct ctl_conn *k);
const struct timeval *ctl_agent_silent_tv(struct ctl *c);
void ctl_on_node_deadline(evutil_socket_t fd, short what, void *arg);

/* ctl_client_auth.c */
/* Is client authentication on ([controller] requirepass or a [user])? */
bool ctl_client_auth_on(const struct ctl *c);
/* May k run cmd? If not, it has been answered (NOAUTH, NOPERM). */
bool ctl_client_may(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_auth(struct ctl_conn *k, struct resp_cmd *cmd);
/* Redis's HELLO [protover [AUTH user pass] [SETNAME name]] (not HELLO flatline). */
void ctl_client_hello(struct ctl_conn *k, struct resp_cmd *cmd);

/* ctl_sentinel.c */
void ctl_on_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_hold_free(struct ctl_conn *k);
/* An event was logged: held SENTINEL questions look again on the next loop turn. */
void ctl_hold_wake(struct ctl *c);
void ctl_on_info(struct ctl_conn *k, struct resp_cmd *cmd);
/* ctl_clients.c: the connection's identity and the commands about commands */
void ctl_client_opened(struct ctl_conn *k);
void ctl_client_command(struct ctl_conn *k, const char *name);
void ctl_on_client(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_command(struct ctl_conn *k, struct resp_cmd *cmd);
int ctl_clients_count(const struct ctl *c);
/* Reply types that differ with the protocol (RESP2 / RESP3 after HELLO 3). */
void ctl_reply_map(const struct ctl_conn *k, struct evbuffer *o, long npairs);
void ctl_reply_null(const struct ctl_conn *k, struct evbuffer *o, bool array);
void ctl_reply_push(const struct ctl_conn *k, struct evbuffer *o, long n);
/* ctl_runtime.c: runtime configuration (<state_file>.runtime) */
int ctl_runtime_load(struct ctl *c);
bool ctl_runtime_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_runtime_status(struct ctl *c, struct evbuffer *b);
void ctl_runtime_event(struct ctl *c, const char *kind);
unsigned ctl_runtime_simulate_flags(void);
void ctl_runtime_from_etcd(struct ctl *c, const char *rel, const char *val);
void ctl_runtime_auth(const struct ctl *c, int shard, const char **user, const char **pass);
/* ctl_hooks.c: notification_script and client_reconfig_script */
int ctl_hooks_start(struct ctl *c);
void ctl_hooks_stop(void);
void ctl_hooks_event(struct ctl *c, const char *channel, const char *msg);
int ctl_hooks_running(void);
int ctl_hooks_queued(void);
void ctl_hooks_pending(const struct ctl_conn *k, struct evbuffer *out);
void ctl_hooks_set_times(int runtime_ms, int retry_ms); /* < 0: unchanged */
int ctl_hooks_max_runtime_ms(void);
int ctl_hooks_retry_delay_ms(void);
void ctl_on_role(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_subscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_unsubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_psubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_punsubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_flatline(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_publish(struct ctl *c, const char *channel, const char *msg);
/* Sentinel's myid survives a restart: kept in <state_file>.myid (written once). */
void ctl_myid_persist(struct ctl *c);
/* The server's run_id (INFO server, asked on every connect), or "". */
const char *ctl_server_runid(const struct ctl *c, int node);
/* fo_ops.event: logged, and published on flatline.<kind> (kind: r's) */
void ctl_event(void *ctx, const char *kind, struct evrec *r);
/* fo_ops.done: answers the client waiting for FLATLINE FAILOVER */
void ctl_failover_done(void *ctx, int shard, const char *result);

/* ctl_status.c */
void ctl_status_text(struct ctl *c, struct evbuffer *b);
void ctl_status_json(struct ctl *c, struct evbuffer *b);
void ctl_print_timeline(struct evbuffer *b, const struct fo_shard *s, const struct fo_failover *f,
			const struct fo_cluster *fo);

/* ctl_servers.c: one link per node's server, and the fo_ops that use it */
int ctl_servers_start(struct ctl *c);
void ctl_servers_free(struct ctl *c);
void ctl_server_discover(struct ctl *c, int node, int timeout_ms);
void ctl_op_ping(void *ctx, int node, int timeout_ms);
void ctl_op_info(void *ctx, int node, int timeout_ms);
void ctl_op_pause(void *ctx, int node, int pause_ms, int timeout_ms);
void ctl_op_unpause(void *ctx, int node);
void ctl_op_promote(void *ctx, int node, int timeout_ms);
void ctl_op_replicaof(void *ctx, int node, int master, int timeout_ms);

/* ctl_metrics.c: the HTTP endpoint on [controller] metrics_listen, and the hooks */
int ctl_metrics_start(struct ctl *c);
void ctl_metrics_free(struct ctl *c);
void ctl_metrics_promoted(struct ctl *c, const struct fo_shard *s);
void ctl_metrics_failover_done(struct ctl *c, const struct fo_shard *s, const char *result);

/* ctl_dns.c */
/* Called once a promotion has been accepted (REPLICAOF NO ONE succeeded) and the
 * state file written: points the shard's dns_name at host. The one place DNS is
 * driven from; a no-op without a [dns] section or a dns_name. */
void ctl_dns_promoted(struct ctl *c, int shard, const char *host);
int ctl_dns_start(struct ctl *c);
void ctl_dns_free(struct ctl *c);

#endif
