// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster file, read with inih through our own line reader so that every
 * message carries the line number and section headers are seen even when a
 * section has no keys.
 *
 * This file, the top of the reader: lines, section headers, secrets on the line,
 * [include]d files, dispatching each key to its row (config_table.c, set by
 * config_keys.c through cfg_set_key()), and cfg_load()/cfg_load_string(), which
 * end with the defaults and cross-section checks of config_check.c. The model,
 * cfg_free() and the look-ups are config.c. An [include] is a key whose setter
 * (config_keys.c) reads the file through p->parse_include, this file's
 * parse_file(): the setters sit below the reader and do not call it by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ini.h>
#include "common/config.h"
#include "common/config_internal.h"

/* [user "name"]: a client of the controller (common/acl.h). */
static bool parse_user_header(struct parser *p, const char *id)
{
	struct cfg *c = p->c;
	struct cfg_user *users;

	if (!strcmp(id, "default")) {
		perr(p, p->line, NULL,
		     "[%s]: the default user's password is [controller] requirepass", p->sect_text);
		return false;
	}
	if (cfg_find_user(c, id)) {
		perr(p, p->line, NULL, "[%s]: user defined twice", p->sect_text);
		return false;
	}
	if (c->nusers == CFG_MAX_USERS) {
		perr(p, p->line, NULL, "more than %d users", CFG_MAX_USERS);
		return false;
	}
	users = realloc(c->users, (c->nusers + 1) * sizeof(*users));
	if (!users)
		return false;
	c->users = users;
	p->cur = c->nusers++;
	memset(&users[p->cur], 0, sizeof(users[0]));
	snprintf(users[p->cur].name, sizeof(users[0].name), "%s", id);
	users[p->cur].line = p->line;
	p->sect = CFG_S_USER;
	return true;
}

/* [node "n1"] / [shard "cache"] / [cluster] … Returns false on error. */
static bool parse_header(struct parser *p, const char *text)
{
	static const struct {
		const char *name;
		enum cfg_sect s;
	} plain[] = {
	    {"cluster", CFG_S_CLUSTER}, {"agent", CFG_S_AGENT}, {"controller", CFG_S_CONTROLLER},
	    {"redis", CFG_S_REDIS},	{"dns", CFG_S_DNS},	{"etcd", CFG_S_ETCD},
	    {"include", CFG_S_INCLUDE}};
	char kind[16], id[CFG_ID_MAX + 2];
	const char *end = strchr(text, ']');
	size_t n;
	struct cfg *c = p->c;

	if (!end) {
		perr(p, p->line, NULL, "section header without ']'");
		return false;
	}
	n = end - text - 1;
	snprintf(p->sect_text, sizeof(p->sect_text), "%.*s", (int)(n < 90 ? n : 90), text + 1);
	p->nkeys_seen = 0;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (!strcmp(p->sect_text, plain[i].name)) {
			/* [include] may come back (one file each); others are one block. */
			if (plain[i].s != CFG_S_INCLUDE && (p->plain_seen & (1u << plain[i].s))) {
				perr(p, p->line, NULL, "[%s] defined twice", p->sect_text);
				return false;
			}
			p->plain_seen |= 1u << plain[i].s;
			p->sect = plain[i].s;
			if (p->sect == CFG_S_CLUSTER)
				p->cluster_line = p->line;
			if (p->sect == CFG_S_DNS) {
				c->dns.enabled = true;
				p->dns_line = p->line;
			}
			if (p->sect == CFG_S_ETCD) {
				c->etcd.enabled = true;
				p->etcd_line = p->line;
			}
			return true;
		}
	}
	if (sscanf(p->sect_text, "%15s \"%65[^\"]\"", kind, id) != 2 ||
	    strlen(p->sect_text) != strlen(kind) + strlen(id) + 3) {
		perr(p, p->line, NULL, "unknown section [%s]", p->sect_text);
		return false;
	}
	if (!valid_id(id)) {
		perr(p, p->line, NULL,
		     "[%s]: a name is 1-%d letters, digits, '-', '_' or '.' (not first)",
		     p->sect_text, CFG_ID_MAX);
		return false;
	}
	if (!strcmp(kind, "node")) {
		if (strchr(id, '.')) {
			perr(p, p->line, NULL,
			     "[%s]: a node id cannot contain '.' (bpffs refuses it)", p->sect_text);
			return false;
		}
		if (parser_find_node(p, id)) {
			perr(p, p->line, NULL, "[%s]: node defined twice", p->sect_text);
			return false;
		}
		if (c->nnodes == CFG_MAX_NODES) {
			perr(p, p->line, NULL, "more than %d nodes", CFG_MAX_NODES);
			return false;
		}
		struct cfg_node *nodes = realloc(c->nodes, (c->nnodes + 1) * sizeof(*nodes));
		if (!nodes)
			return false;
		c->nodes = nodes;
		p->cur = c->nnodes++;
		memset(&nodes[p->cur], 0, sizeof(nodes[0]));
		snprintf(nodes[p->cur].id, sizeof(nodes[0].id), "%s", id);
		cfg_table_sect_defaults(CFG_S_NODE, &nodes[p->cur]);
		nodes[p->cur].shard = -1;
		nodes[p->cur].line = p->line;
		parser_index_add(p, p->cur);
		p->sect = CFG_S_NODE;
		return true;
	}
	if (!strcmp(kind, "controller")) {
		struct cfg_ctl *ctls;

		if (cfg_find_ctl(c, id)) {
			perr(p, p->line, NULL, "[%s]: controller defined twice", p->sect_text);
			return false;
		}
		if (c->nctls == CFG_MAX_CTLS) {
			perr(p, p->line, NULL, "more than %d controllers", CFG_MAX_CTLS);
			return false;
		}
		ctls = realloc(c->ctls, (c->nctls + 1) * sizeof(*ctls));
		if (!ctls)
			return false;
		c->ctls = ctls;
		p->cur = c->nctls++;
		memset(&ctls[p->cur], 0, sizeof(ctls[0]));
		snprintf(ctls[p->cur].id, sizeof(ctls[0].id), "%s", id);
		ctls[p->cur].line = p->line;
		p->sect = CFG_S_CTL;
		return true;
	}
	if (!strcmp(kind, "user"))
		return parse_user_header(p, id);
	if (!strcmp(kind, "shard")) {
		if (cfg_find_shard(c, id)) {
			perr(p, p->line, NULL, "[%s]: shard defined twice", p->sect_text);
			return false;
		}
		if (c->nshards == CFG_MAX_SHARDS) {
			perr(p, p->line, NULL, "more than %d shards", CFG_MAX_SHARDS);
			return false;
		}
		struct cfg_shard *shards = realloc(c->shards, (c->nshards + 1) * sizeof(*shards));
		char **sn = realloc(p->shard_nodes, (c->nshards + 1) * sizeof(*sn));
		int *snl = realloc(p->shard_nodes_line, (c->nshards + 1) * sizeof(*snl));
		if (shards)
			c->shards = shards;
		if (sn)
			p->shard_nodes = sn;
		if (snl)
			p->shard_nodes_line = snl;
		if (!shards || !sn || !snl)
			return false;
		p->cur = c->nshards++;
		memset(&shards[p->cur], 0, sizeof(shards[0]));
		snprintf(shards[p->cur].name, sizeof(shards[0].name), "%s", id);
		cfg_table_sect_defaults(CFG_S_SHARD, &shards[p->cur]);
		shards[p->cur].replicas = -1; /* its nodes minus one */
		shards[p->cur].line = p->line;
		sn[p->cur] = NULL;
		snl[p->cur] = 0;
		p->sect = CFG_S_SHARD;
		return true;
	}
	perr(p, p->line, NULL, "unknown section [%s]", p->sect_text);
	return false;
}

/* The keys whose values are secrets. */
static bool secret_key(enum cfg_sect sect, const char *k, size_t n)
{
	return (sect == CFG_S_CLUSTER && n == 6 && !strncmp(k, "secret", 6)) ||
	       (sect == CFG_S_REDIS && n == 8 && !strncmp(k, "password", 8)) ||
	       (sect == CFG_S_DNS && n == 11 && !strncmp(k, "tsig_secret", 11)) ||
	       (sect == CFG_S_ETCD && n == 8 && !strncmp(k, "password", 8)) ||
	       (sect == CFG_S_NODE && n == 3 && !strncmp(k, "key", 3)) ||
	       (sect == CFG_S_CONTROLLER && n == 11 && !strncmp(k, "requirepass", 11)) ||
	       (sect == CFG_S_USER && n == 8 && !strncmp(k, "password", 8));
}

/* inih cuts a value at " ;" (an inline comment). In a secret that would cut it
 * silently: refuse it, saying so. */
static bool check_secret_line(struct parser *p, const char *t)
{
	const char *eq = strchr(t, '='), *k_end;

	if (!eq)
		return true;
	for (k_end = eq; k_end > t && (k_end[-1] == ' ' || k_end[-1] == '\t'); k_end--)
		;
	if (!secret_key(p->sect, t, k_end - t))
		return true;
	p->holds_secret = true;
	p->secret_line = p->line;
	for (const char *v = eq + 1; *v; v++) {
		if (*v == ';' && v > eq + 1 && (v[-1] == ' ' || v[-1] == '\t')) {
			perr(p, p->line, NULL,
			     "[%s] %.*s: a ';' after a space starts a comment and would cut the "
			     "secret; remove the space or the comment",
			     p->sect_text, (int)(k_end - t), t);
			return false;
		}
	}
	return true;
}

/* One line from the file, NUL bytes seen (fgets would hide them): its length,
 * 0 at the end, -1 on a NUL byte, line_max + 1 when longer. */
static long file_line(FILE *f, char *line, size_t line_max)
{
	size_t n = 0;
	int ch;

	while ((ch = getc(f)) != EOF) {
		if (ch == '\0')
			return -1;
		if (n < line_max)
			line[n] = (char)ch;
		n++;
		if (ch == '\n')
			break;
	}
	if (n > line_max)
		return (long)line_max + 1;
	line[n] = '\0';
	return (long)n;
}

/* inih's reader: one line at a time, counting lines and catching headers. */
static char *read_line(char *buf, int num, void *stream)
{
	struct parser *p = stream;
	char line[CFG_MAX_LINE + 2] = "";
	const char *t;
	size_t n;

	if (p->failed)
		return NULL;
	if (p->f) {
		long got = file_line(p->f, line, sizeof(line) - 1);

		if (got == 0)
			return NULL;
		p->line++;
		if (got < 0) {
			perr(p, p->line, NULL, "NUL byte in line");
			return NULL;
		}
		if ((size_t)got > sizeof(line) - 1) {
			perr(p, p->line, NULL, "line longer than %d characters",
			     (num < CFG_MAX_LINE ? num : CFG_MAX_LINE) - 3);
			return NULL;
		}
	} else {
		if (!*p->s)
			return NULL;
		n = strcspn(p->s, "\n");
		if (n >= sizeof(line) - 1)
			n = sizeof(line) - 1;
		memcpy(line, p->s, n);
		p->s += n;
		if (*p->s == '\n' && n < sizeof(line) - 1) {
			line[n++] = '\n';
			p->s++;
		}
		line[n] = '\0';
		p->line++;
	}
	n = strlen(line);
	/* inih's own buffer (num) is the real limit: 200 bytes in Debian's build. */
	if ((n == sizeof(line) - 1 && line[n - 1] != '\n') || n + 2 >= (size_t)num) {
		perr(p, p->line, NULL, "line longer than %d characters",
		     (num < CFG_MAX_LINE ? num : CFG_MAX_LINE) - 3);
		return NULL;
	}
	for (t = line; *t == ' ' || *t == '\t'; t++)
		;
	if (*t == '[' && !parse_header(p, t))
		return NULL;
	if (*t != '[' && *t != ';' && *t != '#' && !check_secret_line(p, t))
		return NULL;
	memcpy(buf, line, n + 1);
	return buf;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;

	(void)section; /* parse_header() has seen it, with its line */
	if (p->failed)
		return 0;
	if (p->sect != CFG_S_NONE) {
		for (int i = 0; i < p->nkeys_seen; i++) {
			if (!strcmp(p->keys_seen[i], name)) {
				perr(p, p->line, name, "set twice in this section");
				return 0;
			}
		}
		if (p->nkeys_seen < CFG_MAX_SECT_KEYS && strlen(name) < sizeof(p->keys_seen[0]))
			snprintf(p->keys_seen[p->nkeys_seen++], sizeof(p->keys_seen[0]), "%s",
				 name);
	}
	if (p->sect != CFG_S_NONE) {
		const struct cfg_key *k = cfg_key_find(p->sect, name);
		void *base = p->c;

		if (!k) {
			perr(p, p->line, name, "unknown key");
			return 0;
		}
		if (p->sect == CFG_S_NODE)
			base = &p->c->nodes[p->cur];
		else if (p->sect == CFG_S_SHARD)
			base = &p->c->shards[p->cur];
		else if (p->sect == CFG_S_CTL)
			base = &p->c->ctls[p->cur];
		else if (p->sect == CFG_S_USER)
			base = &p->c->users[p->cur];
		return cfg_set_key(p, k, value, base);
	}
	perr(p, p->line, NULL, "key '%s' outside any section", name);
	return 0;
}

static void parse_stream(struct parser *p)
{
	int rc;

	ini_allow_multiline = false; /* a continuation line would hide a typo */
	rc = ini_parse_stream(read_line, p, on_key, p);
	if (!p->failed && rc > 0)
		perr(p, rc, NULL, "not a 'key = value' line or a [section] header");
	else if (!p->failed && rc < 0)
		perr(p, 0, NULL, "failed to read: out of memory");
}

/* Reads the file at path into p->c. -errno when it cannot be opened (nothing
 * written to p->err), 0 otherwise (p->failed on a parse error). A file that
 * holds a secret must not be open to group or others, as ssh wants of keys. */
static int parse_file(struct parser *p, const char *path)
{
	struct stat st;
	int fd, rc;

	p->name = path;
	fd = open(path, O_RDONLY | O_CLOEXEC | (p->depth ? O_NONBLOCK : 0));
	if (fd < 0)
		return -errno;
	/* An include is a regular file (not a FIFO, not /dev/zero). */
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (p->depth && !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	p->f = fdopen(fd, "r");
	if (!p->f) {
		rc = -errno;
		close(fd);
		return rc;
	}
	parse_stream(p);
	if (!p->failed && p->holds_secret && (st.st_mode & 077))
		perr(p, p->secret_line, NULL,
		     "holds a secret and group or others have access to the file (mode %04o): "
		     "chmod 600 %s, owned by the user the daemon runs as",
		     (unsigned)(st.st_mode & 07777), path);
	fclose(p->f);
	p->f = NULL;
	return 0;
}

static struct cfg *new_cfg(struct parser *p)
{
	struct cfg *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	p->c = c;
	p->parse_include = parse_file;
	snprintf(c->path, sizeof(c->path), "%s", p->name);
	set_defaults(c);
	return c;
}

static int finish(struct parser *p, struct cfg **out)
{
	struct cfg *c = p->c;

	if (!p->failed)
		validate(p);
	for (int i = 0; i < c->nshards; i++)
		free(p->shard_nodes[i]);
	free(p->shard_nodes);
	free(p->shard_nodes_line);
	parser_index_free(p);
	if (p->failed) {
		cfg_free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

int cfg_load_extra(const char *path, const char *extra, struct cfg **out, char *err, size_t errlen)
{
	struct parser p = {.name = path, .err = err, .errlen = errlen};
	int rc;

	if (!new_cfg(&p))
		return -ENOMEM;
	rc = parse_file(&p, path);
	if (rc) {
		snprintf(err, errlen, "failed to open cluster file %s: %s", path, strerror(-rc));
		parser_index_free(&p);
		cfg_free(p.c);
		return rc;
	}
	if (!p.failed && extra) {
		p.s = extra; /* after the file's last line, as if it were there */
		parse_stream(&p);
	}
	p.name = path;
	return finish(&p, out);
}

int cfg_load(const char *path, struct cfg **out, char *err, size_t errlen)
{
	return cfg_load_extra(path, NULL, out, err, errlen);
}

int cfg_load_string(const char *name, const char *text, struct cfg **out, char *err, size_t errlen)
{
	struct parser p = {.name = name, .s = text, .err = err, .errlen = errlen};

	if (!new_cfg(&p))
		return -ENOMEM;
	parse_stream(&p);
	return finish(&p, out);
}
