/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster file (flatline.conf(5)): git-config style INI read
 * with inih. Every key is validated; an error names file, line, section, key. */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define CFG_ID_MAX 64
/* [agent] peer_down_after_ms defaults to this many probe intervals (250 ms at 25 ms). */
#define CFG_PEER_DOWN_ROUNDS 10

/* host:port, [v6]:port or unix:/path */
struct cfg_endpoint {
	char host[256]; /* empty for a unix socket */
	int port;
	char unix_path[108];
};

struct cfg_node {
	char id[CFG_ID_MAX + 1];
	char address[64];	   /* the host's IP, probed with ICMP/ICMPv6 by its peers */
	int address_line;	   /* line of its address key */
	struct cfg_endpoint redis; /* the server on it */
	char redis_str[300];	   /* as written, for messages */
	int priority;		   /* 0 = never promote; default 100 */
	char pidfile[256];	   /* optional: where the server writes its pid */
	char key[65];		   /* optional: its node key, hex (common/auth.h); else
				    * derived from [cluster] secret */
	int shard;		   /* index in cfg.shards, -1 if in none */
	int line;		   /* line of its section header */
	/* Membership changed at runtime (the controller's, controller/ctl_members.c):
	 * added by `flatline node add` / SENTINEL MONITOR (not in the file), removed
	 * (a tombstone: its slot and index stay, nothing looks it up), a spare (in no
	 * shard's quorum; spare_for names the shard it stands by for). */
	bool runtime, removed, spare;
	char spare_for[CFG_ID_MAX + 1];
	/* A spare made a member of its shard (controller/ctl_spares.c): kept as an
	 * "attach" line of the state file or etcd when the node is the file's. */
	bool attached;
};

/* TLS files of one side of a link (common/tls.h). Paths are absolute, "" = not
 * given; the lines name the keys in messages (files are read when a daemon builds
 * its TLS context, so a host needs only the files of its own role). */
struct cfg_tls {
	char cert[256];
	char key[256];
	char ca[256];
	int cert_line, key_line, ca_line;
};

/* [controller] tls_auth_clients, as Redis's tls-auth-clients. */
enum cfg_tls_auth { CFG_TLS_AUTH_YES, CFG_TLS_AUTH_NO, CFG_TLS_AUTH_OPTIONAL };

/* [controller "c1"]: one of several controllers (HA mode, with [etcd]). */
struct cfg_ctl {
	char id[CFG_ID_MAX + 1];
	struct cfg_endpoint listen; /* its client and agent address (plain) */
	char listen_str[300];	    /* as written; "" = no plain socket (tls_listen only) */
	/* TLS in HA mode: every controller has tls_listen or none has; the certificate
	 * files and tls_auth_clients are [controller]'s, shared (each host reads its own
	 * copy of the files at those paths). */
	bool tls; /* tls_listen was given */
	struct cfg_endpoint tls_listen;
	struct cfg_endpoint tls_address; /* where agents and clients reach it; default
					  * tls_listen */
	bool have_tls_address;
	int tls_line, tls_address_line;
	int line;
};

/* [user "name"]: a client of the controller's socket (common/acl.h). */
struct cfg_user {
	char name[CFG_ID_MAX + 1];
	char password[256];
	unsigned perms; /* ACL_* bits of its `commands` */
	bool have_perms;
	int line;
};

#define CFG_MAX_ETCD 16
#define CFG_MAX_CTLS 16

struct cfg_shard {
	char name[CFG_ID_MAX + 1];
	int *nodes; /* indexes in cfg.nodes */
	int nnodes;
	char dns_name[256]; /* optional, absolute ("cache.ha.example.") */
	/* mode = cluster: one primary of a Redis/Valkey Cluster and its replicas; its
	 * failover is the cluster's own election (controller/fo_cluster.c). */
	bool cluster;
	int line;
	/* Added at runtime, removed (a tombstone), or SENTINEL MONITOR's: its replicas
	 * are found in its primary's INFO and added (controller/ctl_members.c). */
	bool runtime, removed, discover;
	/* Redundancy (controller/ctl_spares.c): the replicas it should have (-1: its
	 * nodes minus one), its standby nodes as written (validate() marks each node
	 * spare), how long a deficit waits for the old primary before a spare is
	 * attached, how long a new replica stays steady before it may be promoted. */
	int replicas;
	char spares[512];
	int spares_line;
	int restore_after_ms, promotable_after_ms;
	/* Its servers' credentials when they are not [redis]'s ("" = [redis]'s): used by
	 * its nodes' agents and by the controller for its servers (ctl_runtime_auth). */
	char user[128];
	char password[256];
};

struct cfg {
	char path[256];
	char name[CFG_ID_MAX + 1];
	char secret[256];
	struct {
		int ping_interval_ms;
		int hung_after;
		int probe_interval_ms;
		int peer_down_after_ms; /* default CFG_PEER_DOWN_ROUNDS x probe_interval_ms */
		int heartbeat_ms;
		int replica_heartbeat_ms; /* a quiet replica's reports */
		char event_log[256];
		bool self_fence;
		int self_fence_after_ms; /* default 2 x peer_down_after_ms */
		int lease_ms;		 /* the write lease (user/agent/lease.h); 0 = off */
		int stop_grace_ms;	 /* stopped or frozen this long = hung (0: at once) */
		int busy_max_ms;	 /* busy on a CPU, not answering: alive this long */
		struct cfg_endpoint metrics_listen; /* Prometheus text; host empty = off */
		struct cfg_tls tls; /* tls_cert/tls_key: presented to the controller;
				     * tls_ca: verifies it (default [controller] tls_ca) */
	} agent;
	struct {
		struct cfg_endpoint listen;
		/* Where agents and clients reach it: `address`, by default listen (which
		 * must then name a host, not a wildcard such as [::] or 0.0.0.0). */
		struct cfg_endpoint address;
		bool have_address; /* address was given */
		int address_line;
		int node_down_after_ms;
		char state_file[256];
		char event_log[256];
		char notification_script[256];	  /* Sentinel's notification-script */
		char client_reconfig_script[256]; /* Sentinel's client-reconfig-script */
		char provision_script[256];	  /* a deficit no spare can fill */
		int failover_block_ms;
		int tilt_ms;
		struct cfg_endpoint metrics_listen; /* Prometheus text; host empty = off */
		/* TLS (common/tls.h): tls_listen set = agents and clients use TLS. */
		bool tls;	  /* tls_listen was given */
		bool have_listen; /* listen was given: plain stays on with TLS */
		struct cfg_endpoint tls_listen;
		struct cfg_endpoint tls_address; /* where it is reached; default tls_listen */
		bool have_tls_address;
		int tls_line, tls_address_line;
		struct cfg_tls tls_files; /* its certificate, key, and the agents' CA */
		enum cfg_tls_auth tls_auth_clients;
		/* Client authentication (common/acl.h): the default user's password;
		 * with it or any [user], every command but AUTH/HELLO/QUIT needs a login. */
		char requirepass[256];
		bool agent_address_check; /* an agent must connect from its node's address */
		/* mode = shadow: judge and log, change nothing (no command that changes a
		 * server, no DNS update, no write lease); read by agents and controller. */
		bool shadow;
	} controller;
	struct {
		char user[128];
		char password[256];
		bool tls; /* tls = yes: every server link over TLS */
		int tls_line;
		struct cfg_tls tls_files;  /* tls_ca verifies the servers; tls_cert/key: ours */
		char tls_server_name[256]; /* names the certificates must carry; "" = each
					    * node's redis host (name or IP) */
	} redis;
	struct {
		bool enabled; /* a [dns] section is present */
		struct cfg_endpoint server;
		char zone[256];
		char tsig_name[256];
		char tsig_algorithm[32];
		char tsig_secret[256];
		int ttl;
		int check_ms;
	} dns;
	struct {
		bool enabled;			   /* an [etcd] section is present: HA mode */
		char endpoints[CFG_MAX_ETCD][256]; /* http://IP:2379 or https://... */
		int nendpoints;
		char prefix[128]; /* default /flatline/<cluster name>/ */
		int lease_ms;	  /* leader lease TTL asked of etcd; default 2000 */
		int timeout_ms;	  /* one etcd request; default 500 */
		char user[128];	  /* etcd authentication, optional */
		char password[256];
		char cacert[256]; /* TLS to etcd, optional */
		char cert[256];
		char key[256];
	} etcd;
	struct cfg_user *users; /* [user "name"] sections: clients of the controller */
	int nusers;
	struct cfg_ctl *ctls; /* [controller "id"] sections */
	int nctls;
	struct cfg_node *nodes;
	int nnodes;
	struct cfg_shard *shards;
	int nshards;
	/* The controller's: nodes and shards the arrays have room for (runtime
	 * membership appends without moving them); 0 = nnodes / nshards. */
	int node_cap, shard_cap;
};

/* Reads and validates FILE. On error returns -errno/-EINVAL and writes one line
 * such as "cluster.conf:14: [node \"n2\"] priority: not a number" to err. */
int cfg_load(const char *path, struct cfg **out, char *err, size_t errlen);
/* The file, then the lines of extra after it (the agent of a node added at runtime:
 * its [node] section, from its command line). */
int cfg_load_extra(const char *path, const char *extra, struct cfg **out, char *err, size_t errlen);
/* The same from a string (unit tests, fuzzing); name is used in messages. */
int cfg_load_string(const char *name, const char *text, struct cfg **out, char *err, size_t errlen);
void cfg_free(struct cfg *c);
struct cfg_node *cfg_find_node(const struct cfg *c, const char *id);
struct cfg_shard *cfg_find_shard(const struct cfg *c, const char *name);
struct cfg_ctl *cfg_find_ctl(const struct cfg *c, const char *id);
struct cfg_user *cfg_find_user(const struct cfg *c, const char *name);
/* The user ("" = the default user) and password ("" = none) for the servers of shard
 * (an index in c->shards, -1: none): the shard's password and user when it has a
 * password, else [redis]'s. */
void cfg_server_auth(const struct cfg *c, int shard, const char **user, const char **pass);
/* Why a node at this address can never be probed by its peers (ICMP echo to an
 * IPv4 address, ICMPv6 echo to an IPv6 one), so that its host's failure would go
 * unseen: unspecified, multicast or broadcast, IPv6 link-local (no interface can
 * be named), IPv4-mapped IPv6. NULL if it can be. The file refuses such a node. */
const char *cfg_address_unprobeable(const char *address);
/* Why the failure of node n's host cannot be told apart by probing though the file
 * is valid (its address is loopback, which every host answers for; another node of
 * its shard has the same address); 0 if nothing, 1 with the reason in buf. The
 * agent warns with it, naming file:line. */
int cfg_probe_warning(const struct cfg *c, const struct cfg_node *n, char *buf, size_t len);
/* host:port, or [host]:port for an IPv6 address (as Redis's anetFormatAddr). */
const char *cfg_hostport(char *buf, size_t len, const char *host, int port);
/* ---- The table of keys (config_table.c): one row per key, as Redis's
 * static_configs[]. The reader, the defaults, cfg_diff(), both daemons' reloads,
 * `flatline check` and the test against flatline.conf(5) all walk it. */

/* The sections; CFG_S_CTL is [controller "ID"]. */
enum cfg_sect {
	CFG_S_NONE,
	CFG_S_CLUSTER,
	CFG_S_AGENT,
	CFG_S_CONTROLLER,
	CFG_S_REDIS,
	CFG_S_DNS,
	CFG_S_ETCD,
	CFG_S_NODE,
	CFG_S_SHARD,
	CFG_S_CTL,
	CFG_S_INCLUDE,
	CFG_S_USER,
	CFG_S_COUNT
};

enum cfg_type {
	CFG_T_INT,	/* decimal, within [lo, hi] */
	CFG_T_BOOL,	/* yes/no, true/false, on/off, 1/0 */
	CFG_T_STR,	/* free text */
	CFG_T_SECRET,	/* at least 16 bytes */
	CFG_T_PATH,	/* absolute */
	CFG_T_ENDPOINT, /* host:port, [v6]:port or unix:/path */
	CFG_T_METRICS,	/* host:port, or empty (off) */
	CFG_T_IP,	/* an IPv4 or IPv6 address */
	CFG_T_DNS_NAME, /* absolute, ending in '.' */
	CFG_T_CUSTOM,	/* its own setter (a list, a word, several fields) */
};

/* Processes, for what reads a key and what applies its change on SIGHUP. */
enum cfg_proc { CFG_P_AGENT = 1, CFG_P_CONTROLLER = 2, CFG_P_CLI = 4 };

struct parser;
struct cfg_key;
/* A CFG_T_CUSTOM key: parses v into p->c (field: the row's field in it). */
typedef bool (*cfg_set_fn)(struct parser *p, const struct cfg_key *k, const char *v, void *field);
/* Optional: whether the key has the same value in a and b (a, b: the section's
 * struct, in files ca and cb); default by type, or the field's bytes. */
typedef bool (*cfg_eq_fn)(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
			  const struct cfg_key *k);

struct cfg_key {
	enum cfg_sect sect;
	const char *name;
	enum cfg_type type;
	long lo, hi;	 /* CFG_T_INT */
	const char *def; /* the default as the file writes it; NULL: empty, required or
			  * derived (then doc says which) */
	size_t off;	 /* the field in struct cfg, or in the named section's struct
			  * (cfg_node, cfg_shard, cfg_user, cfg_ctl) */
	size_t size;	 /* its size; 0: no field of its own ([include] path) */
	unsigned reads;	 /* enum cfg_proc: who reads it */
	unsigned live;	 /* enum cfg_proc: who applies a change on SIGHUP (the other
			  * readers need a restart) */
	cfg_set_fn set;
	cfg_eq_fn eq;
	const char *alias; /* another spelling, or NULL */
	const char *doc;   /* one line */
};

extern const struct cfg_key cfg_keys[];
extern const int cfg_nkeys;
/* "cluster", "agent", …, "node", "controller" (for CFG_S_CTL: with an id). */
const char *cfg_sect_name(enum cfg_sect s);
/* The row of key name (or its alias) in section s, NULL if none. */
const struct cfg_key *cfg_key_find(enum cfg_sect s, const char *name);
/* What happens to a change of k in process proc (one CFG_P_*): "live", "restart",
 * or NULL when proc does not read k. */
const char *cfg_key_apply_word(const struct cfg_key *k, unsigned proc);
/* What a SIGHUP does with a change of k, as flatline.conf(5) says it after "On
 * SIGHUP: ": "live (agent, controller)", "live (controller); needs a restart
 * (agent)", "needs a restart (controller)", "nothing (read by each command)". */
const char *cfg_key_reload_text(const struct cfg_key *k, char *buf, size_t len);

/* Calls fn for every key whose value differs between a and b, with "[section]"
 * (as written, with the id of a named one), the key's name and its row (a node,
 * shard, user or controller added or removed is its whole section: key "*", row
 * NULL). Returns how many. For SIGHUP: what changed. */
typedef void (*cfg_diff_fn)(void *ctx, enum cfg_sect sect, const char *section, const char *key,
			    const struct cfg_key *row);
int cfg_diff(const struct cfg *a, const struct cfg *b, cfg_diff_fn fn, void *ctx);

/* ---- SIGHUP (config_reload.c): the same walk for both daemons. Every changed key
 * that the daemon reads is, by its row, applied (its new value copied into the
 * running configuration, then done() tells the daemon to use it), refused with a
 * reason (the old value stays), or named as needing a restart; each is logged. */
struct cfg_reload {
	unsigned proc;	 /* CFG_P_AGENT or CFG_P_CONTROLLER */
	const char *who; /* "agent", "controller": in messages */
	/* Optional: does the daemon refuse the live change of k? True with the reason in
	 * why (false: apply it). */
	bool (*check)(void *ctx, const struct cfg_key *k, const struct cfg *old,
		      const struct cfg *new, char *why, size_t whylen);
	/* Called once after the copies when something was applied. */
	void (*done)(void *ctx);
	void *ctx;
	/* Out: how many keys differ in all (the daemon's or not), and by outcome the
	 * keys as "[section] key, [section] key" (refused: "[section] key: why; …"). */
	int changed, napplied, nrestart, nrefused;
	char applied[1024], restart[1024], refused[1024];
};
/* Walks the changes from old (the running configuration, updated in place) to new. */
void cfg_reload_run(struct cfg_reload *r, struct cfg *old, const struct cfg *new, const char *path);

/* Parses "host:port", "[v6]:port" or "unix:/path"; -EINVAL if malformed. */
int cfg_parse_endpoint(const char *s, struct cfg_endpoint *ep, int default_port);

#endif
