/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the cluster file reader's files share (config_load.c, config_check.c,
 * config_table.c, config_keys.c, config.c): the parser state and the functions
 * one file calls in a file below it. Not an interface: only user/common/config*.c
 * include it. */
#ifndef FL_CONFIG_INTERNAL_H
#define FL_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "common/config.h"

#define CFG_MAX_LINE   1024
#define CFG_MAX_NODES  32768
#define CFG_MAX_SHARDS 16384

#define CFG_MIN_SECRET	  16  /* bytes: as ssh-keygen refuses short keys */
#define CFG_MAX_INCLUDE	  4   /* nested [include]s */
#define CFG_MAX_SECT_KEYS 32  /* distinct keys in one section */
#define CFG_MAX_USERS	  256 /* [user "name"] sections */

struct parser {
	struct cfg *c;
	const char *name; /* file name for messages */
	/* input: a FILE or a string */
	FILE *f;
	const char *s;
	int line;
	enum cfg_sect sect;
	char sect_text[CFG_ID_MAX + 32]; /* as written, for messages */
	int cur;			 /* node or shard index */
	int dns_line;			 /* line of the [dns] header */
	int listen_line;		 /* line of [controller] listen */
	int etcd_line;			 /* line of the [etcd] header */
	char **shard_nodes;		 /* per shard: "nodes" as written */
	int *shard_nodes_line;
	char *err;
	size_t errlen;
	bool failed;
	unsigned plain_seen; /* 1 << enum cfg_sect of [cluster] … [dns] seen, in any file */
	char keys_seen[CFG_MAX_SECT_KEYS][32]; /* in the current section */
	int nkeys_seen;
	int depth;	   /* of [include]s */
	bool holds_secret; /* this file sets a secret: its mode matters */
	int secret_line;
	int cluster_line; /* of the [cluster] header */
	/* The nodes' ids, hashed (open addressing, index + 1; 0 = empty): a file of
	 * 30,000 nodes is checked without a search of every node per node. NULL: not
	 * made (out of memory), cfg_find_node() instead. */
	int *node_ix;
	unsigned node_ix_cap; /* a power of two, at least twice the nodes */
	/* config_load.c's parse_file(), which an [include] (cfg_set_include, below
	 * the reader) reads its file with; NULL for the table's defaults. */
	int (*parse_include)(struct parser *p, const char *path);
};

/* config.c */
/* config_check.c: the parser's index of node ids */
void parser_index_add(struct parser *p, int i);
struct cfg_node *parser_find_node(const struct parser *p, const char *id);
void parser_index_free(struct parser *p);
void perr(struct parser *p, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool valid_id(const char *s);

/* config_keys.c: one key by its row (base: struct cfg, or the named section's
 * struct), and the custom setters the table names. */
bool cfg_set_key(struct parser *p, const struct cfg_key *k, const char *v, void *base);
#define CFG_SETTER(n) bool n(struct parser *p, const struct cfg_key *k, const char *v, void *field)
CFG_SETTER(cfg_set_tls_file);
CFG_SETTER(cfg_set_ctl_tls_socket);
CFG_SETTER(cfg_set_tls_auth);
CFG_SETTER(cfg_set_ctl_addr);
CFG_SETTER(cfg_set_redis_tls);
CFG_SETTER(cfg_set_tls_server_name);
CFG_SETTER(cfg_set_redis_password);
CFG_SETTER(cfg_set_tsig_name);
CFG_SETTER(cfg_set_tsig_algorithm);
CFG_SETTER(cfg_set_tsig_secret);
CFG_SETTER(cfg_set_etcd_endpoints);
CFG_SETTER(cfg_set_etcd_prefix);
CFG_SETTER(cfg_set_ctls_listen);
CFG_SETTER(cfg_set_ctls_tls_socket);
CFG_SETTER(cfg_set_node_address);
CFG_SETTER(cfg_set_node_redis);
CFG_SETTER(cfg_set_node_key);
CFG_SETTER(cfg_set_shard_nodes);
CFG_SETTER(cfg_set_shard_spares);
CFG_SETTER(cfg_set_include);
CFG_SETTER(cfg_set_user_commands);

/* config_table.c: the defaults of the plain sections ([cluster] … [etcd]) into c,
 * and of one named section's struct (a new [node "x"] …). */
void cfg_table_defaults(struct cfg *c);
void cfg_table_sect_defaults(enum cfg_sect s, void *base);

/* config_check.c */
void set_defaults(struct cfg *c);
void validate(struct parser *p);

#endif
