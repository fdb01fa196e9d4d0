/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Parsing INFO text (server and replication sections) from Redis, Valkey and
 * Dragonfly. Dragonfly differs: no master_repl_offset on a primary,
 * slave_repl_offset only after the full sync, no run_id. */
#ifndef FL_INFO_H
#define FL_INFO_H

#include <stddef.h>

enum info_server { INFO_SRV_UNKNOWN = 0, INFO_SRV_REDIS, INFO_SRV_VALKEY, INFO_SRV_DRAGONFLY };
enum info_role { INFO_ROLE_UNKNOWN = 0, INFO_ROLE_MASTER, INFO_ROLE_SLAVE };

struct info_repl {
	enum info_server server;
	enum info_role role;
	char version[32];
	char run_id[48];       /* "" when absent (Dragonfly) */
	long pid;	       /* process_id, 0 if absent */
	long tcp_port;	       /* 0 if absent */
	long long uptime_s;    /* uptime_in_seconds, -1 if absent */
	char exe_comm[16];     /* executable's base name as the kernel's comm; "" absent */
	char master_host[256]; /* replicas */
	int master_port;
	int link_up;		/* master_link_status: 1 up, 0 down, -1 absent */
	long long last_io_s;	/* master_last_io_seconds_ago, -1 absent */
	int sync_in_progress;	/* master_sync_in_progress */
	char master_replid[48]; /* "" when absent */
	long long offset;	/* this server's offset; -1 when the server does not say */
	int slave_priority;	/* replica-priority; 100 when absent, as Redis defaults */
	int connected_slaves;
	int loading;	     /* loading:1 */
	int cluster_enabled; /* cluster_enabled:1 (INFO cluster): a Redis/Valkey Cluster node */
};

/* Fills *out from INFO text (any sections). Unknown lines are ignored; a line
 * without ':' outside a "# Section" header, or a malformed number, is -EINVAL.
 * text need not be NUL-terminated. */
int info_parse(const char *text, size_t len, struct info_repl *out);
/* The number after "KEY:" at the start of a line of INFO text (any section), -1 when
 * no line has it or it is no number. */
long long info_ll(const char *text, size_t len, const char *key);
/* The keys of every db in INFO's keyspace section ("db3:keys=5,..."), summed; 0 when
 * the section lists none, -1 without a "# Keyspace" section. A count or a sum past
 * LLONG_MAX is LLONG_MAX (info_ll's numbers too). */
long long info_keyspace_keys(const char *text, size_t len);
const char *info_server_name(enum info_server s);
const char *info_role_name(enum info_role r);

#endif
