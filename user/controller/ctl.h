/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The controller's modules and what they share (private to user/controller/),
 * from the top down; each calls only the modules below it (docs/architecture.md):
 *
 *   controller.c       start-up, the struct fo_ops table, signals, reload, the command
 *   ctl_listen.c       the listen socket: accept, read, dispatch to ctl_on_<command>
 *   ctl_sentinel.c     the Sentinel API (SENTINEL, INFO, ROLE), FLATLINE
 *   ctl_agents.c       agent sessions: HELLO flatline, PROVE, REPORT, heartbeat deadlines
 *   ctl_client_auth.c  client logins: AUTH, HELLO [AUTH], what each user may run
 *   ctl_clients.c      CLIENT …, COMMAND …
 *   ctl_status.c       `FLATLINE STATUS` as text and as JSON: printing only
 *   ctl_ha.c           HA mode ([etcd]): leader or follower, the shard state in etcd
 *   ctl_discover.c     the INFO round of every node at start (or for a new leader)
 *   ctl_mode.c         the mode while running (reload, FLATLINE MODE), FLATLINE CUTOVER
 *   ctl_members_cmd.c  FLATLINE NODE|SHARD, SENTINEL MONITOR/REMOVE/RESET, over
 *   ctl_members.c      nodes and shards added and removed at runtime (state file, etcd)
 *   ctl_shard_timer.c  the failover core's per-shard timers
 *   ctl_runtime_cmd.c  SENTINEL SET/CONFIG/DEBUG …, over
 *   ctl_runtime.c      the runtime settings (<state_file>.runtime, etcd)
 *   ctl_servers.c      requests to the Redis servers (the I/O behind struct fo_ops)
 *   ctl_dns.c          DNS wiring: the update after a promotion, drift check and repair
 *   ctl_metrics.c      Prometheus metrics;  ctl_state.c  the state file (a worker thread)
 *   ctl_event.c        the event outbox: log, publish, scripts, simulated failures, and
 *                      "something changed" (the held questions look again)
 *   ctl_pubsub.c       SUBSCRIBE …, and the messages to subscribers
 *   ctl_hooks.c        notification_script, client_reconfig_script
 *   ctl_hold.c         questions held until something changes
 *   ctl_conn.c         a connection: free/fatal/reading/resume, RESP2/RESP3 replies,
 *                      output limits, the roles' releases (ctl_conn.h)
 *   ctl_limits.c       maxclients, the rejection log rate per address
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
#include "common/clock.h"
#include "controller/dns.h"
#include "controller/failover.h"
#include "controller/ha.h"

struct evbuffer;
struct redisReply;
struct ha;
struct ctl_state_writer;

/* The names the client commands reply with. */
#define CTL_VERSION	  "0.1.0"
#define CTL_REDIS_VERSION "7.0.0" /* what INFO claims, for clients that check */

#define CTL_TICK_MS	       100  /* TILT check */
#define CTL_DNS_FIRST_CHECK_MS 1500 /* after the start-up INFO round (at most 1 s) */
#define CTL_DISCOVER_MS	       1000 /* the first INFO round at start */
#define CTL_RETRY_MIN_MS       100  /* reconnecting to a server */
#define CTL_RETRY_MAX_MS       1000
#define CTL_PROTO_VERSION      AUTH_PROTO_VERSION
/* Limits like Redis's, for whatever can reach the socket. */
#define CTL_MAX_CLIENTS	    10000	/* Redis's maxclients default */
#define CTL_FD_RESERVE	    64		/* descriptors kept for servers, files, DNS */
#define CTL_PREAUTH_FRAME   (64u << 10) /* largest frame before AUTH or the agent handshake */
#define CTL_PREAUTH_MS	    5000	/* a frame, or the agent handshake, begun: done by then */
#define CTL_LOGIN_MS	    10000 /* client authentication on: logged in (or an agent) by then */
#define CTL_MAX_CHANNEL	    256	  /* bytes in a channel or pattern name */
#define CTL_ACCEPT_PAUSE_MS 100	  /* out of descriptors: accept again after */
#define CTL_LOG_SRC_MS	    1000  /* rejections logged per source address at most */
#define CTL_LOG_SLOTS	    256
/* What a connection that is not a proven agent gets per turn of the event loop
 * before the others get theirs: hundreds of connections sending
 * empty lines or inline junk leave the loop turning in milliseconds. */
#define CTL_TURN_BYTES 4096
/* ... and at most this many commands (4 KiB of "x\n" is 2,048 error replies). */
#define CTL_TURN_CMDS 64
/* The event loop's priorities (controller.c's ctl_base_new): libevent gives an
 * event the middle one unless told; a connection that used up its turn runs at
 * the low one, a few callbacks at a time. */
#define CTL_NPRIOS	      3
#define CTL_PRIO_DEFAULT      1
#define CTL_PRIO_LOW	      2
#define CTL_LOW_MAX_CALLBACKS 4

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

/* Each module's state, defined in its own .c. */
struct ctl_conn;
struct ctl_conn_mod;
struct ctl_listener;
struct ctl_dns_state;
struct ctl_ha_state;
struct ctl_agents;
struct ctl_limits;
struct ctl_pubsub;
struct ctl_holds;
struct ctl_events;
struct ctl_hooks;
struct ctl_runtime;
struct ctl_discovery;
struct ctl_client_auth;
struct ctl_clients;
struct ctl_members;
struct ctl_sentinel;
struct ctl_servers;
struct ctl_top;
struct ctl_shard_timers;

/* What every module needs: the configuration, the failover core, the loop, the
 * event log, the connections, and the few values several modules read (each says
 * whose); then one pointer per module to its state. */
struct ctl {
	struct cfg *cfg;
	struct fo_cluster fo;
	struct event_base *base;
	struct evlog *log;
	char event_log[256];
	char state_file[256];
	char myid[41];
	long long start_ms;
	/* The connections (ctl_conn.c; accepted by ctl_listen.c) */
	struct ctl_conn *conns;
	/* Where this controller listens, as printed (written by ctl_listen.c; read by
	 * controller.c, ctl_status.c, ctl_discover.c) */
	char listen_str[300];
	/* HA mode: NULL without an [etcd] section; what every module asks (ctl_may_act) */
	struct ha *ha;
	char id[CFG_ID_MAX + 1]; /* --id: this controller's [controller "id"] */
	/* Counted where it happens, read by ctl_metrics.c */
	struct ctl_metrics m;
	/* 0, or the longest [agent] heartbeat_ms since start: written by controller.c's
	 * reload, read by ctl_agents.c and ctl_conn.c (ctl_agent_heartbeat_ms) */
	int silent_heartbeat_ms;
	/* The node slots in use (fo.nnodes; set by controller.c and ctl_members.c, read by
	 * ctl_agents.c and ctl_servers.c) */
	int nnodes;
	/* The modules' states, one pointer each, the struct defined in its .c */
	struct ctl_top *top;		       /* controller.c: the tick, the signals */
	struct ctl_shard_timers *shard_timers; /* ctl_shard_timer.c */
	struct ctl_servers *servers;	       /* ctl_servers.c */
	struct ctl_state_writer *state_writer; /* ctl_state.c; NULL in HA mode */
	struct ctl_ha_state *ha_state;	       /* ctl_ha.c */
	struct ctl_sentinel *sentinel;	       /* ctl_sentinel.c */
	struct ctl_conn_mod *conn;	       /* ctl_conn.c */
	struct ctl_listener *listener;	       /* ctl_listen.c */
	struct ctl_agents *agents;	       /* ctl_agents.c */
	struct ctl_dns_state *dns_state;       /* ctl_dns.c */
	struct ctl_limits *limits;	       /* ctl_limits.c */
	struct ctl_pubsub *pubsub;	       /* ctl_pubsub.c */
	struct ctl_holds *holds;	       /* ctl_hold.c */
	struct ctl_events *events;	       /* ctl_event.c */
	struct ctl_hooks *hooks;	       /* ctl_hooks.c */
	struct ctl_runtime *runtime;	       /* ctl_runtime.c */
	struct ctl_discovery *discover;	       /* ctl_discover.c */
	struct ctl_client_auth *client_auth;   /* ctl_client_auth.c */
	struct ctl_clients *clients;	       /* ctl_clients.c */
	struct ctl_members *members;	       /* ctl_members.c */
	struct ctl_spares *spares;	       /* ctl_spares.c */
	struct ctl_cluster *cluster;	       /* ctl_cluster.c */
};

/* The heartbeat an agent's silence is counted in: the longer of [agent] heartbeat_ms
 * and replica_heartbeat_ms (a quiet replica reports that slowly), or a longer one they
 * had before a reload (agents not yet reloaded still report that slowly). */
static inline int ctl_agent_heartbeat_ms(const struct ctl *c)
{
	int ms = c->cfg->agent.heartbeat_ms > c->cfg->agent.replica_heartbeat_ms
		     ? c->cfg->agent.heartbeat_ms
		     : c->cfg->agent.replica_heartbeat_ms;

	return c->silent_heartbeat_ms > ms ? c->silent_heartbeat_ms : ms;
}

/* The slots per node and per shard every module allocates: the cluster file's and
 * those added at runtime (ctl_members.c), which never move. */
static inline int ctl_node_room(const struct ctl *c)
{
	return c->cfg->node_cap > c->cfg->nnodes ? c->cfg->node_cap : c->cfg->nnodes;
}
static inline int ctl_shard_room(const struct ctl *c)
{
	return c->cfg->shard_cap > c->cfg->nshards ? c->cfg->shard_cap : c->cfg->nshards;
}

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

#define ARG_IS(i, s) (!strcasecmp(cmd->argv[i], s))

/* The modules, from the top down: each calls only those below it. */

/* controller.c: start-up, fo_ops, signals, reload, `flatline controller` */
/* The modules' states, bottom up (ctl_new); needs c->cfg, c->fo and c->base. */
int ctl_modules_init(struct ctl *c);
void ctl_modules_fini(struct ctl *c);

/* ctl_listen.c: accept, read, dispatch */
/* Binds listen_ep (NULL: TLS only, in HA mode) and tls_listen_ep (NULL: no TLS). */
int ctl_listen(struct ctl *c, const struct cfg_endpoint *listen_ep,
	       const struct cfg_endpoint *tls_listen_ep);
/* HA mode: the address to publish in etcd (the plain one, else the TLS one). */
const char *ctl_listen_ha_addr(const struct ctl *c);
/* Closes the listen sockets and frees the TLS context. */
void ctl_listen_close(struct ctl *c);

/* ctl_sentinel.c: SENTINEL (the questions held while a primary changes), INFO,
 * ROLE, FLATLINE */
int ctl_sentinel_init(struct ctl *c);
void ctl_sentinel_fini(struct ctl *c);
void ctl_on_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_info(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_role(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_flatline(struct ctl_conn *k, struct resp_cmd *cmd);
/* ctl_agents.c: FLATLINE PROVE <node>|* <nonce>, the controller's proof to the CLI
 * (auth_cli_proof) under that node's key, or under K_cli (auth_cli_key) for "*". */
void ctl_on_flatline_prove(struct ctl_conn *k, struct resp_cmd *cmd);
/* Sentinel's myid survives a restart: kept in <state_file>.myid (written once). */
void ctl_myid_persist(struct ctl *c);
/* fo_ops.done: answers the client waiting for FLATLINE FAILOVER */
void ctl_failover_done(void *ctx, int shard, const char *result);

/* ctl_agents.c: RESP handlers and the session's end */
void ctl_agents_init(struct ctl *c);
/* Per node: the heartbeat deadline, the last rejection logged. */
int ctl_agents_start(struct ctl *c);
void ctl_agents_free(struct ctl *c);
void ctl_on_hello(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_report(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_prove(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_agent_timed_out(struct ctl_conn *k);

/* ctl_client_auth.c */
int ctl_client_auth_init(struct ctl *c);
void ctl_client_auth_fini(struct ctl *c);
/* May k run cmd? If not, it has been answered (NOAUTH, NOPERM). */
bool ctl_client_may(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_auth(struct ctl_conn *k, struct resp_cmd *cmd);
/* Redis's HELLO [protover [AUTH user pass] [SETNAME name]] (not HELLO flatline). */
void ctl_client_hello(struct ctl_conn *k, struct resp_cmd *cmd);

/* ctl_clients.c: the connection's identity and the commands about commands */
int ctl_clients_init(struct ctl *c);
void ctl_clients_fini(struct ctl *c);
void ctl_client_opened(struct ctl_conn *k);
void ctl_client_command(struct ctl_conn *k, const char *name);
void ctl_on_client(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_command(struct ctl_conn *k, struct resp_cmd *cmd);
int ctl_clients_count(const struct ctl *c);

/* ctl_status.c */
void ctl_status_text(struct ctl *c, struct evbuffer *b);
void ctl_status_json(struct ctl *c, struct evbuffer *b);
void ctl_print_timeline(struct evbuffer *b, const struct fo_shard *s, const struct fo_failover *f,
			const struct fo_cluster *fo);

/* ctl_ha.c: HA mode's roles (below it: discovery, runtime, the outbox) */
/* addr: what other controllers and clients are told this one listens on. */
int ctl_ha_start(struct ctl *c, const char *addr);
/* A clean stop: revokes the lease, then breaks the loop (at most 1 s); false
 * without HA or when stopping already (then the caller breaks the loop). */
bool ctl_ha_stop(struct ctl *c);
void ctl_ha_free(struct ctl *c);
/* Writes the shard's primary and epoch to etcd (leader only); nothing when the record
 * holds them already (ctl_ha_record). */
int ctl_ha_save(struct ctl *c, int shard);
/* ops->record: writes "node is the primary at epoch" to etcd, fenced by the leader key,
 * and answers fo_on_record. After a write of unknown outcome (timed out) it first
 * reads the record again (the shard's epoch_floor) and refuses until it has. */
int ctl_ha_record(struct ctl *c, int shard, int node, unsigned long long epoch);
int ctl_ha_controllers(const struct ctl *c, const char **ids, const char **addrs, int max);
void ctl_ha_status(const struct ctl *c, struct ctl_ha_view *v);
/* HA mode: why etcd is unavailable, "" when it answers (and without HA). */
const char *ctl_ha_etcd_why(const struct ctl *c);
/* May this controller act on servers and DNS now? Always without HA; in HA mode
 * only the leader, and only while its lease is surely alive. */
static inline bool ctl_may_act(const struct ctl *c)
{
	return !c->ha || ha_may_act(c->ha, fl_mono_ms());
}
/* May it change a server or DNS now: may act, and not in shadow mode ([controller]
 * mode = shadow or --shadow: judge and say, change nothing; fo_shadow.c). */
static inline bool ctl_may_change(const struct ctl *c)
{
	return !c->fo.shadow && ctl_may_act(c);
}

/* ctl_mode.c: shadow or active while running. 0, or -EBUSY and why (a failover is in
 * progress), or -EAGAIN and the first reason of fo_cutover_check (going active, not
 * forced); by says who (an event mode_changed is logged). */
int ctl_set_mode(struct ctl *c, bool shadow, bool force, const char *by, char *why, size_t whylen);
void ctl_on_flatline_mode(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_flatline_cutover(struct ctl_conn *k, struct resp_cmd *cmd);

/* ctl_discover.c: the INFO round of every node, then fo_discover (at start, and
 * for a new leader). */
int ctl_discover_init(struct ctl *c);
void ctl_discover_fini(struct ctl *c);
void ctl_discover_start(struct ctl *c);

/* ctl_runtime_cmd.c: the Sentinel subcommands over the runtime settings; true
 * when cmd was one of them (answered). */
bool ctl_runtime_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);

/* ctl_members.c: nodes and shards added and removed at runtime (ctl_members.h) */
/* Before the modules: room in cfg, the state file's membership lines applied. */
int ctl_members_prepare(struct cfg *cfg, const char *state_file, char *err, size_t errlen);
int ctl_members_start(struct ctl *c);
/* ctl_members_scan.c, the layer over it: the tick (every CTL_MEMBERS_TICK_MS: the
 * retry, the scan, runtime shards' discovery) started and after_info registered;
 * after ctl_members_start. */
int ctl_members_scan_start(struct ctl *c);
void ctl_members_fini(struct ctl *c);
/* HA mode: <prefix>members changed (NULL: deleted), from any controller. */
void ctl_members_from_etcd(struct ctl *c, const char *val);
/* ctl_members_cmd.c: FLATLINE NODE|SHARD …, and SENTINEL MONITOR/REMOVE/RESET
 * (true when cmd was one of those: answered). */
void ctl_on_members(struct ctl_conn *k, struct resp_cmd *cmd);
bool ctl_members_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);
/* ctl_spares.c: redundancy restored. A shard with fewer healthy replicas than
 * [shard] replicas (replica_deficit) gets, after restore_after_ms, a spare that
 * passes the checks attached and synced (spare_attached, replica_synced,
 * redundancy_restored), or provision_script (provision_requested). Only the one
 * controller that may change servers attaches. What status and metrics show. */
int ctl_spares_start(struct ctl *c);
void ctl_spares_fini(struct ctl *c);
struct ctl_spares_view {
	int replicas, desired; /* healthy replicas now, and wanted */
	long long deficit_ms;  /* how long fewer than desired; 0: not */
	const char *state;     /* "idle", "checking", "attaching", "syncing", "steady" */
	const char *node;      /* the spare in that state, or NULL */
	long long state_ms;    /* since when it is in it */
};
void ctl_spares_view(const struct ctl *c, int shard, struct ctl_spares_view *v);

/* ctl_shard_timer.c: the failover timer of a shard (at start, or added at runtime). */
int ctl_shard_timers_init(struct ctl *c);
int ctl_shard_timer_add(struct ctl *c, int shard);
/* fo_ops.timer: the shard's timer in ms, or stopped (ms < 0). */
void ctl_shard_timer_set(struct ctl *c, int shard, int ms);
void ctl_shard_timers_free(struct ctl *c);
/* ctl_servers.c: the link of a node added or removed at runtime, and a request of
 * one's own (false: the node has no server link). */
int ctl_server_add(struct ctl *c, int node);
void ctl_server_drop(struct ctl *c, int node);
/* Has node a server link now (not removed, the link set up)? */
bool ctl_server_linked(const struct ctl *c, int node);
/* ctl_agents.c: a node removed at runtime: its agent sessions closed. */
void ctl_agents_node_drop(struct ctl *c, int node);

/* ctl_runtime.c: runtime configuration (<state_file>.runtime, or etcd) */
int ctl_runtime_init(struct ctl *c);
void ctl_runtime_fini(struct ctl *c);
int ctl_runtime_load(struct ctl *c);
void ctl_runtime_status(struct ctl *c, struct evbuffer *b);
void ctl_runtime_from_etcd(struct ctl *c, const char *rel, const char *val);
void ctl_runtime_auth(const struct ctl *c, int shard, const char **user, const char **pass);

/* ctl_servers.c: one link per node's server, and the fo_ops that use it */
int ctl_servers_start(struct ctl *c);
void ctl_servers_free(struct ctl *c);
/* INFO replication of node; done runs when it answered (or failed). */
void ctl_server_discover(struct ctl *c, int node, int timeout_ms, void (*done)(struct ctl *c));
/* The server's run_id (INFO server, asked on every connect), or "". */
const char *ctl_server_runid(const struct ctl *c, int node);
bool ctl_server_request(struct ctl *c, int node, int timeout_ms,
			void (*fn)(void *ctx, struct redisReply *reply, const char *err,
				   void *priv),
			void *priv, int argc, const char **argv);
void ctl_op_ping(void *ctx, int node, int timeout_ms);
void ctl_op_info(void *ctx, int node, int timeout_ms);
void ctl_op_pause(void *ctx, int node, int pause_ms, int timeout_ms);
void ctl_op_unpause(void *ctx, int node);
void ctl_op_promote(void *ctx, int node, int timeout_ms);
void ctl_op_replicaof(void *ctx, int node, int master, int timeout_ms);

/* ctl_cluster.c: cluster shards' I/O (the election, CLUSTER NODES) */
int ctl_cluster_init(struct ctl *c);
void ctl_cluster_fini(struct ctl *c);
void ctl_op_cluster_failover(void *ctx, int node, const char *option, int timeout_ms);
/* CLUSTER NODES of the shard's primary now, for fo_cluster_check. */
void ctl_cluster_check(struct ctl *c, int shard);
/* From the controller's tick: each cluster shard checked every second. */
void ctl_cluster_tick(struct ctl *c);

/* ctl_dns.c */
/* Called once a promotion has been accepted (REPLICAOF NO ONE succeeded) and the
 * state file written: points the shard's dns_name at host. The one place DNS is
 * driven from; a no-op without a [dns] section or a dns_name. */
void ctl_dns_promoted(struct ctl *c, int shard, const char *host);
int ctl_dns_start(struct ctl *c);
void ctl_dns_free(struct ctl *c);
/* What DNS says of the shard's name; NULL without a [dns] section. */
const struct ctl_dns *ctl_dns_shard(const struct ctl *c, int shard);

/* ctl_metrics.c: the HTTP endpoint on [controller] metrics_listen, and the hooks */
int ctl_metrics_start(struct ctl *c);
void ctl_metrics_free(struct ctl *c);
void ctl_metrics_promoted(struct ctl *c, const struct fo_shard *s);
void ctl_metrics_failover_done(struct ctl *c, const struct fo_shard *s, const char *result);

/* ctl_state.c */
int ctl_state_start(struct ctl *c);
/* Hands the current state to the writer thread (returns at once). */
void ctl_state_save(struct ctl *c);
/* Writes buf now, in the loop (a runtime membership change, kept before it is
 * made): after a write the thread has begun, replacing one it has not. */
int ctl_state_write_now(struct ctl *c, const char *buf, size_t len, char *err, size_t errlen);
/* True while the last write failed (then buf says why). */
bool ctl_state_error(struct ctl *c, char *buf, size_t len);
/* Writes what is pending, then stops the thread. */
void ctl_state_stop(struct ctl *c);

/* ctl_event.c: the event outbox (as Sentinel's sentinelEvent); nothing else fans
 * an event out */
int ctl_event_init(struct ctl *c);
void ctl_event_fini(struct ctl *c);
/* fo_ops.event, and HA's and DNS's events: logged, published on flatline.<kind>
 * (kind: r's), looked at by SIMULATE-FAILURE; then something changed. */
void ctl_event(void *ctx, const char *kind, struct evrec *r);
/* A record of the controller's own: logged (not published); something changed. */
void ctl_log(struct ctl *c, struct evrec *r);
/* fo_ops.publish: a Sentinel message on its channel, and the notification scripts. */
void ctl_event_sentinel(void *ctx, const char *channel, const char *msg);
/* Something changed without an event (a membership applied): the held questions look
 * again. What every event above ends with. */
void ctl_changed(struct ctl *c);
/* SENTINEL SIMULATE-FAILURE */
#define CTL_SIM_CRASH_AFTER_ELECTION  (1u << 0)
#define CTL_SIM_CRASH_AFTER_PROMOTION (1u << 1)
void ctl_event_simulate(struct ctl *c, unsigned flags);
unsigned ctl_event_simulated(const struct ctl *c);

/* ctl_pubsub.c: SUBSCRIBE … and the messages to subscribers */
int ctl_pubsub_init(struct ctl *c);
void ctl_pubsub_fini(struct ctl *c);
void ctl_on_subscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_unsubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_psubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_on_punsubscribe(struct ctl_conn *k, struct resp_cmd *cmd);
void ctl_pubsub_publish(struct ctl *c, const char *channel, const char *msg);

/* ctl_hooks.c: notification_script and client_reconfig_script */
/* Its state; its own records go to log. */
int ctl_hooks_init(struct ctl *c, void (*log)(struct ctl *c, struct evrec *r));
int ctl_hooks_start(struct ctl *c);
void ctl_hooks_stop(struct ctl *c);
void ctl_hooks_event(struct ctl *c, const char *channel, const char *msg);
/* Another script run the same way (queued, retried, never through a shell):
 * [controller] provision_script (ctl_spares.c). At most 7 arguments. */
void ctl_hooks_run(struct ctl *c, const char *script, int argc, const char **args);
int ctl_hooks_running(const struct ctl *c);
int ctl_hooks_queued(const struct ctl *c);
void ctl_hooks_pending(const struct ctl_conn *k, struct evbuffer *out);
void ctl_hooks_set_times(struct ctl *c, int runtime_ms, int retry_ms); /* < 0: unchanged */
int ctl_hooks_max_runtime_ms(const struct ctl *c);
int ctl_hooks_retry_delay_ms(const struct ctl *c);

/* ctl_hold.c: questions held until something changes. wanted: does cmd still
 * wait? answer: answers it (registered once, by ctl_sentinel.c). */
int ctl_hold_init(struct ctl *c, bool (*wanted)(struct ctl *c, const struct resp_cmd *cmd),
		  void (*answer)(struct ctl_conn *k, struct resp_cmd *cmd));
void ctl_hold_fini(struct ctl *c);
/* Takes cmd (left empty) and answers it later; false: answer it now. */
bool ctl_hold(struct ctl_conn *k, struct resp_cmd *cmd);
/* Something changed: the held questions look again on the next loop turn. */
void ctl_hold_wake(struct ctl *c);

/* ctl_conn.c (ctl_conn.h): a connection, the RESP2/RESP3 replies, output limits */

/* ctl_limits.c */
int ctl_limits_init(struct ctl *c);
void ctl_limits_fini(struct ctl *c);
/* RLIMIT_NOFILE raised, maxclients fitted under it */
void ctl_fit_clients(struct ctl *c);
int ctl_max_clients(const struct ctl *c);
/* May a rejection from peer be logged now? Once per CTL_LOG_SRC_MS per source
 * address; *suppressed: how many were not since. */
bool ctl_log_allowed(struct ctl *c, const char *peer, unsigned *suppressed);
/* Is client authentication on ([controller] requirepass or a [user])? */
static inline bool ctl_client_auth_on(const struct ctl *c)
{
	return c->cfg->controller.requirepass[0] || c->cfg->nusers;
}

#endif
