// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline status`, `flatline failover` and `flatline cutover`: ask the running
 * controller, on its listen address, with FLATLINE STATUS, (authenticated)
 * FLATLINE FAILOVER and FLATLINE CUTOVER (and, for cutover, the Sentinels). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "cmds.h"
#include "cli/cli_conn.h"
#include "common/acl.h"
#include "common/auth.h"
#include "common/config.h"
#include "common/log.h"
#include "common/tls.h"

#define STATUS_DEFAULT_CONFIG "/etc/flatline/cluster.conf"

/* The controllers to ask, in order: [controller] listen (tls_address with TLS), or
 * in HA mode each [controller "id"]'s listen (its tls_address with TLS). */
static int n_controllers(const struct cfg *cfg)
{
	return cfg->etcd.enabled ? cfg->nctls : 1;
}

static const struct cfg_endpoint *controller_ep(const struct cfg *cfg, int i)
{
	return tls_ctl_ep(cfg, i);
}

/* The first controller from *next on that accepts a connection; *next moves past it.
 * TLS when the file has tls_listen or --tls was given. */
static struct cli_conn *connect_controller(const struct cfg *cfg, struct cli_tls *tls,
					   int timeout_ms, int *next)
{
	tls->on |= cfg->controller.tls;
	while (*next < n_controllers(cfg)) {
		struct cli_conn *rc =
		    cli_connect(cfg, controller_ep(cfg, (*next)++), tls, timeout_ms);

		if (rc)
			return rc;
	}
	return NULL;
}

/* Logs in with what the file holds for `need` (ACL_*): [controller] requirepass,
 * else the first [user] allowed it, else (client authentication off) the cluster
 * secret, which only FAILOVER needs then. 0, or -EACCES (said why). */
static int login(struct cli_conn *rc, const struct cfg *cfg, unsigned need)
{
	const char *user = "default", *pass = NULL;
	redisReply *rep;
	int ret = 0;

	if (cfg->controller.requirepass[0]) {
		pass = cfg->controller.requirepass;
	} else if (cfg->nusers) {
		for (int i = 0; i < cfg->nusers && !pass; i++)
			if (!(need & ~cfg->users[i].perms)) {
				user = cfg->users[i].name;
				pass = cfg->users[i].password;
			}
		if (!pass) {
			pr_warn("failed to authenticate to the controller: no [user] in %s may run "
				"this (and no [controller] requirepass)\n",
				cfg->path);
			return -EACCES;
		}
	} else if (need & ~ACL_READ) {
		pass = cfg->secret;
	}
	if (!pass)
		return 0;
	/* Not to whatever answers on the controller's address: a file with a key
	 * (every controller's and agent's file has one) asks for the proof first. */
	ret = cli_prove_controller(rc, cfg);
	if (ret == -ENOKEY)
		ret = 0;
	else if (ret)
		return -EACCES;
	rep = cli_command(rc, "AUTH %s %s", user, pass);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		pr_warn("failed to authenticate to the controller: %s\n",
			rep ? rep->str : cli_errstr(rc));
		ret = -EACCES;
	}
	if (rep)
		freeReplyObject(rep);
	return ret;
}

static struct cfg *load(const char *path)
{
	struct cfg *cfg;
	char err[512];

	if (cfg_load(path, &cfg, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return NULL;
	}
	return cfg;
}

/* The options both commands take: -c FILE, -h, one more long option (extra: its
 * name, has_arg) and nargs words after them. 0, -1 (help printed) or 2 (usage). */
struct ctl_cmd_opts {
	const char *config;
	const char *extra;  /* the extra option's argument ("" when it takes none) */
	bool takeover;	    /* failover --takeover (a cluster shard) */
	struct cli_tls tls; /* --tls, --cacert, --cert, --key */
};

/* --tls, --cacert, --cert, --key: 0 if opt is one of them and its value is good. */
static int tls_opt(int opt, struct cli_tls *tls)
{
	switch (opt) {
	case 'T':
		tls->on = true;
		return 0;
	case 'A':
		tls->cacert = optarg;
		break;
	case 'C':
		tls->cert = optarg;
		break;
	case 'K':
		tls->key = optarg;
		break;
	default:
		return -1;
	}
	if (!optarg || optarg[0] != '/') {
		pr_warn("--%s: not an absolute path: '%s'\n",
			opt == 'A'   ? "cacert"
			: opt == 'C' ? "cert"
				     : "key",
			optarg ? optarg : "");
		return 1;
	}
	tls->on = true;
	return 0;
}

#define TLS_USAGE                                                                                  \
	"  --tls              TLS to the controller (implied when the file has\n"                  \
	"                     [controller] tls_listen)\n"                                          \
	"  --cacert FILE      the CA that signed the controller's certificate (default\n"          \
	"                     [agent] tls_ca, else [controller] tls_ca)\n"                         \
	"  --cert FILE, --key FILE  a client certificate and its key (default [agent]\n"           \
	"                     tls_cert and tls_key)\n"

static int parse_opts(int argc, char **argv, const char *usage, const char *extra, int has_arg,
		      int nargs, struct ctl_cmd_opts *o)
{
	const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {extra, has_arg, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},
	    {"tls", no_argument, NULL, 'T'},
	    {"cacert", required_argument, NULL, 'A'},
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},
	    {"takeover", no_argument, NULL, 'O'},
	    {0},
	};
	int opt;

	o->config = STATUS_DEFAULT_CONFIG;
	o->extra = NULL;
	o->takeover = false;
	o->tls = (struct cli_tls){0};
	while ((opt = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config = optarg;
			break;
		case 'x':
			o->extra = optarg ? optarg : "";
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		case 'O':
			if (strcmp(extra, "to")) { /* failover's only */
				fputs(usage, stderr);
				return 2;
			}
			o->takeover = true;
			break;
		default:
			if (!tls_opt(opt, &o->tls))
				break;
			fputs(usage, stderr);
			return 2;
		}
	}
	if (argc - optind != nargs) {
		fputs(usage, stderr);
		return 2;
	}
	return 0;
}

/* The controller's answer to one command: a string, printed as it is (0), else 1
 * with "failed to <what>: <why>". Frees rep and rc. */
static int print_answer(struct cli_conn *rc, redisReply *rep, const char *what)
{
	int ret = 1;

	if (!rep) {
		pr_warn("failed to %s: %s\n", what, cli_errstr(rc));
	} else if (rep->type == REDIS_REPLY_STRING) {
		fwrite(rep->str, 1, rep->len, stdout);
		ret = 0;
	} else {
		pr_warn("failed to %s: %s\n", what,
			rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	}
	if (rep)
		freeReplyObject(rep);
	cli_free(rc);
	return ret;
}

static const char status_usage[] =
    "usage: flatline status [-c FILE] [--json]\n"
    "\n"
    "  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG "): where the\n"
    "                     controller listens\n"
    "  --json             one JSON object instead of the table\n" TLS_USAGE;

int cmd_status(int argc, char **argv)
{
	struct ctl_cmd_opts o;
	struct cfg *cfg;
	struct cli_conn *rc;
	int ret, next = 0;

	ret = parse_opts(argc, argv, status_usage, "json", no_argument, 0, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = 1;
	cfg = load(o.config);
	if (!cfg)
		return 1;
	rc = connect_controller(cfg, &o.tls, 2000, &next);
	if (rc && login(rc, cfg, ACL_READ)) {
		cli_free(rc);
		rc = NULL;
	}
	if (rc) {
		redisReply *rep = cli_command(rc, "FLATLINE STATUS %s", o.extra ? "JSON" : "TEXT");

		ret = print_answer(rc, rep, "read the controller's status");
	}
	cfg_free(cfg);
	return ret;
}

static const char failover_usage[] =
    "usage: flatline failover SHARD [--to NODE] [--takeover] [-c FILE]\n"
    "\n"
    "Planned switchover: writes paused on the primary (CLIENT PAUSE WRITE), the target\n"
    "waited for until it has every write, promoted, the others repointed, writes\n"
    "resumed. No acknowledged write is lost. Prints the timeline.\n"
    "\n"
    "  --to NODE          the replica to promote (default: the best one)\n"
    "  --takeover         a cluster shard ([shard] mode = cluster): CLUSTER FAILOVER\n"
    "                     TAKEOVER (no vote of the other primaries: may break \"last\n"
    "                     failover wins\"; for a cluster that lost its majority). Without\n"
    "                     it a cluster shard's move is plain CLUSTER FAILOVER (lossless)\n"
    "  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG ")\n" TLS_USAGE;

int cmd_failover(int argc, char **argv)
{
	struct ctl_cmd_opts o;
	const char *to, *shard;
	char what[512];
	struct cfg *cfg;
	struct cli_conn *rc;
	redisReply *rep;
	int ret, next = 0;

	ret = parse_opts(argc, argv, failover_usage, "to", required_argument, 1, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = 1;
	to = o.extra;
	shard = argv[optind];
	snprintf(what, sizeof(what), "fail over %s", shard);
	cfg = load(o.config);
	if (!cfg)
		return 1;
again:
	rc = connect_controller(cfg, &o.tls, 2000, &next);
	if (!rc)
		goto cleanup;
	cli_set_timeout(rc, 60000); /* the switchover is bounded well below this */
	if (login(rc, cfg, ACL_FAILOVER)) {
		cli_free(rc);
		goto cleanup;
	}
	/* Each word its own argument (the format is hiredis's). */
	if (to && o.takeover)
		rep = cli_command(rc, "FLATLINE FAILOVER %s %s TAKEOVER", shard, to);
	else if (to)
		rep = cli_command(rc, "FLATLINE FAILOVER %s %s", shard, to);
	else if (o.takeover)
		rep = cli_command(rc, "FLATLINE FAILOVER %s TAKEOVER", shard);
	else
		rep = cli_command(rc, "FLATLINE FAILOVER %s", shard);
	if (rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOTLEADER", 9) &&
	    next < n_controllers(cfg)) {
		/* HA mode: a follower; ask the next controller. */
		freeReplyObject(rep);
		cli_free(rc);
		goto again;
	}
	ret = print_answer(rc, rep, what);
cleanup:
	cfg_free(cfg);
	return ret;
}

/* ---- flatline cutover ---- */

#define CUTOVER_MAX_SENTINELS 16

static const char cutover_usage[] =
    "usage: flatline cutover [-c FILE] [--sentinel HOST:PORT]...\n"
    "\n"
    "Says whether the controller may go from shadow to active now without acting at\n"
    "once (docs/sentinel.md, \"Cutover\"): its view matches every server's role, every\n"
    "agent is reporting, no failover is in progress or owed. Exit 0 when safe, 1 with\n"
    "each reason otherwise.\n"
    "\n"
    "  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG ")\n"
    "  --sentinel HOST:PORT  also a running Sentinel: it must name the same primary of\n"
    "                     every shard and run no failover (password from the\n"
    "                     environment: FLATLINE_SENTINEL_PASSWORD)\n" TLS_USAGE;

/* One reply of a plain connection as "host:port" (get-master-addr-by-name), "" if none. */
static void addr_reply(redisReply *r, char *out, size_t len)
{
	out[0] = '\0';
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING)
		snprintf(out, len, "%s:%s", r->element[0]->str, r->element[1]->str);
}

/* A Sentinel against the controller, shard by shard; the number of reasons printed. */
static int check_sentinel(const struct cfg *cfg, struct cli_conn *rc, const char *where)
{
	const char *pass = getenv("FLATLINE_SENTINEL_PASSWORD");
	struct timeval tv = {2, 0};
	struct cfg_endpoint ep;
	redisContext *s;
	redisReply *r;
	int n = 0;

	if (cfg_parse_endpoint(where, &ep, 26379) || !ep.port) {
		printf("not safe: --sentinel %s: not HOST:PORT\n", where);
		return 1;
	}
	s = redisConnectWithTimeout(ep.host, ep.port, tv);
	if (!s || s->err) {
		printf("not safe: Sentinel %s: %s\n", where, s ? s->errstr : "out of memory");
		redisFree(s);
		return 1;
	}
	redisSetTimeout(s, tv);
	if (pass && pass[0]) {
		r = redisCommand(s, "AUTH %s", pass);
		if (r)
			freeReplyObject(r);
	}
	for (int i = 0; i < cfg->nshards; i++) {
		const char *name = cfg->shards[i].name;
		char fl[300], se[300];

		r = cli_command(rc, "SENTINEL get-master-addr-by-name %s", name);
		addr_reply(r, fl, sizeof(fl));
		if (r)
			freeReplyObject(r);
		r = redisCommand(s, "SENTINEL get-master-addr-by-name %s", name);
		addr_reply(r, se, sizeof(se));
		if (!r) {
			printf("not safe: Sentinel %s: %s\n", where, s->errstr);
			n++;
			break;
		}
		freeReplyObject(r);
		if (strcmp(fl, se)) {
			printf("not safe: %s: Sentinel %s names the primary %s, flatline %s\n",
			       name, where, se[0] ? se : "(none)", fl[0] ? fl : "(none)");
			n++;
		}
		r = redisCommand(s, "SENTINEL MASTER %s", name);
		for (size_t j = 0; r && r->type == REDIS_REPLY_ARRAY && j + 1 < r->elements; j += 2)
			if (r->element[j]->type == REDIS_REPLY_STRING &&
			    !strcmp(r->element[j]->str, "flags") &&
			    r->element[j + 1]->type == REDIS_REPLY_STRING &&
			    (strstr(r->element[j + 1]->str, "failover_in_progress") ||
			     strstr(r->element[j + 1]->str, "o_down"))) {
				printf("not safe: %s: Sentinel %s: %s\n", name, where,
				       r->element[j + 1]->str);
				n++;
			}
		if (r)
			freeReplyObject(r);
	}
	redisFree(s);
	return n;
}

int cmd_cutover(int argc, char **argv)
{
	const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"sentinel", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},	      {"tls", no_argument, NULL, 'T'},
	    {"cacert", required_argument, NULL, 'A'}, {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},    {0},
	};
	const char *config = STATUS_DEFAULT_CONFIG, *sentinels[CUTOVER_MAX_SENTINELS];
	struct cli_tls tls = {0};
	int nsent = 0, opt, ret = 1, next = 0, reasons = 0;
	struct cli_conn *rc = NULL;
	redisReply *rep = NULL;
	struct cfg *cfg;

	while ((opt = getopt_long(argc, argv, "c:s:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (nsent == CUTOVER_MAX_SENTINELS) {
				pr_warn("at most %d --sentinel\n", CUTOVER_MAX_SENTINELS);
				return 2;
			}
			sentinels[nsent++] = optarg;
			break;
		case 'h':
			fputs(cutover_usage, stdout);
			return 0;
		default:
			if (!tls_opt(opt, &tls))
				break;
			fputs(cutover_usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(cutover_usage, stderr);
		return 2;
	}
	cfg = load(config);
	if (!cfg)
		return 1;
	/* HA mode: the leader's view counts; a follower says so, the next is asked. */
	while ((rc = connect_controller(cfg, &tls, 2000, &next))) {
		if (login(rc, cfg, ACL_READ))
			goto cleanup;
		rep = cli_command(rc, "FLATLINE CUTOVER");
		if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
		    rep->element[0]->type != REDIS_REPLY_STRING) {
			pr_warn("failed to ask the controller: %s\n",
				!rep				 ? cli_errstr(rc)
				: rep->type == REDIS_REPLY_ERROR ? rep->str
								 : "unexpected reply");
			goto cleanup;
		}
		if (rep->elements < 2 ||
		    strncmp(rep->element[1]->str, "this controller is not", 22) ||
		    next >= n_controllers(cfg))
			break;
		freeReplyObject(rep);
		rep = NULL;
		cli_free(rc);
	}
	if (!rc)
		goto cleanup;
	printf("mode: %s\n", rep->element[0]->str);
	for (size_t i = 1; i < rep->elements; i++)
		if (rep->element[i]->type == REDIS_REPLY_STRING)
			printf("not safe: %s\n", rep->element[i]->str);
	reasons = (int)rep->elements - 1;
	for (int i = 0; i < nsent; i++)
		reasons += check_sentinel(cfg, rc, sentinels[i]);
	if (!reasons)
		printf("safe: every server in the role flatline has, every agent reporting, no "
		       "failover in progress%s\n",
		       !strcmp(rep->element[0]->str, "shadow")
			   ? "; switch with mode = active and a reload (or FLATLINE MODE active)"
			   : "");
	ret = reasons ? 1 : 0;
cleanup:
	if (rep)
		freeReplyObject(rep);
	cli_free(rc);
	cfg_free(cfg);
	return ret;
}

/* ---- flatline node add|remove, flatline shard add|remove ---- */

static const char node_usage[] =
    "usage: flatline node add SHARD NODE --address IP --redis HOST:PORT [--priority N]\n"
    "                         [--spare] [-c FILE]\n"
    "       flatline node remove SHARD NODE [-c FILE]\n"
    "\n"
    "Adds a node to a shard of the running controller(s), or removes one, without a\n"
    "restart; kept in the state file (etcd in HA mode). The node's agent then starts\n"
    "with `flatline agent -c FILE --node NODE --address IP --redis HOST:PORT` and proves\n"
    "the key printed here (derived from the cluster secret, as `flatline node-key`).\n"
    "The shard's primary cannot be removed: fail over first.\n"
    "\n"
    "  --address IP       the host's address, probed by its peers\n"
    "  --redis HOST:PORT  its server (or unix:/path)\n"
    "  --priority N       0 = never promote (default 100)\n"
    "  --spare            a standby: in no shard's quorum until attached\n"
    "  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG ")\n" TLS_USAGE;

static const char shard_usage[] =
    "usage: flatline shard add NAME [--dns-name NAME] [-c FILE]\n"
    "       flatline shard remove NAME [-c FILE]\n"
    "\n"
    "Adds an (empty) shard to the running controller(s), or removes one with its nodes\n"
    "(refused while it fails over). Nodes join it with `flatline node add`.\n"
    "\n"
    "  --dns-name NAME    the name DNS points at its primary (absolute, ending in '.')\n"
    "  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG ")\n" TLS_USAGE;

#define MEMBER_MAX_ARGS 16

/* Sends argv (FLATLINE NODE|SHARD ...) to the first controller that takes it. */
static int send_members(const char *config, struct cli_tls *tls, int argc, const char **argv,
			const char *what, const char *node)
{
	const char *a[MEMBER_MAX_ARGS] = {0};
	char fmt[MEMBER_MAX_ARGS * 3 + 1] = "";
	struct cli_conn *rc;
	struct cfg *cfg = load(config);
	redisReply *rep;
	int next = 0, ret = 1;

	if (!cfg)
		return 1;
	/* One "%s" per word: hiredis sends each as its own argument. */
	for (int i = 0, off = 0; i < argc && i < MEMBER_MAX_ARGS; i++) {
		a[i] = argv[i];
		off += snprintf(fmt + off, sizeof(fmt) - off, "%s", i ? " %s" : "%s");
	}
	rc = connect_controller(cfg, tls, 2000, &next);
	if (!rc)
		goto cleanup;
	cli_set_timeout(rc, 10000);
	if (login(rc, cfg, ACL_ADMIN)) {
		cli_free(rc);
		goto cleanup;
	}
	rep = cli_command(rc, fmt, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
			  a[10], a[11], a[12], a[13], a[14], a[15]);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		pr_warn("failed to %s: %s\n", what, rep ? rep->str : cli_errstr(rc));
	} else {
		printf("%s: done\n", what);
		if (node && cfg->secret[0]) {
			uint8_t key[AUTH_KEY_LEN];
			char hex[AUTH_HEX_LEN + 1];

			if (!auth_node_key(cfg->secret, strlen(cfg->secret), node, key)) {
				auth_hex(key, sizeof(key), hex);
				printf(
				    "node %s's key (its agent proves it; derived from the cluster "
				    "secret): %s\n",
				    node, hex);
			}
		}
		ret = 0;
	}
	if (rep)
		freeReplyObject(rep);
	cli_free(rc);
cleanup:
	cfg_free(cfg);
	return ret;
}

static int members_cmd(int argc, char **argv, bool node)
{
	static const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"address", required_argument, NULL, 'a'},
	    {"redis", required_argument, NULL, 'r'},  {"priority", required_argument, NULL, 'p'},
	    {"spare", no_argument, NULL, 's'},	      {"dns-name", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},	      {"tls", no_argument, NULL, 'T'},
	    {"cacert", required_argument, NULL, 'A'}, {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},    {0},
	};
	const char *usage = node ? node_usage : shard_usage, *config = STATUS_DEFAULT_CONFIG;
	const char *address = NULL, *redis = NULL, *priority = NULL, *dns = NULL;
	const char *av[MEMBER_MAX_ARGS];
	struct cli_tls tls = {0};
	bool spare = false, add;
	char what[200];
	int opt, n = 0, want;

	while ((opt = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'a':
			address = optarg;
			break;
		case 'r':
			redis = optarg;
			break;
		case 'p':
			priority = optarg;
			break;
		case 's':
			spare = true;
			break;
		case 'd':
			dns = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			if (!tls_opt(opt, &tls))
				break;
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind >= argc || (strcmp(argv[optind], "add") && strcmp(argv[optind], "remove"))) {
		fputs(usage, stderr);
		return 2;
	}
	add = !strcmp(argv[optind], "add");
	want = node ? 3 : 2;
	if (argc - optind != want || (!node && (!add && dns)) ||
	    (node && !add && (address || redis || priority || spare)) ||
	    (node && add && (!address || !redis)) ||
	    (!node && (address || redis || priority || spare)) || (node && dns)) {
		fputs(usage, stderr);
		return 2;
	}
	av[n++] = "FLATLINE";
	av[n++] = node ? "NODE" : "SHARD";
	av[n++] = add ? "ADD" : "REMOVE";
	av[n++] = argv[optind + 1];
	if (node)
		av[n++] = argv[optind + 2];
	if (address) {
		av[n++] = "ADDRESS";
		av[n++] = address;
	}
	if (redis) {
		av[n++] = "REDIS";
		av[n++] = redis;
	}
	if (priority) {
		av[n++] = "PRIORITY";
		av[n++] = priority;
	}
	if (spare)
		av[n++] = "SPARE";
	if (dns) {
		av[n++] = "DNS-NAME";
		av[n++] = dns;
	}
	if (node)
		snprintf(what, sizeof(what), "%s node %s %s shard %s", add ? "add" : "remove",
			 argv[optind + 2], add ? "to" : "from", argv[optind + 1]);
	else
		snprintf(what, sizeof(what), "%s shard %s", add ? "add" : "remove",
			 argv[optind + 1]);
	return send_members(config, &tls, n, av, what, node && add ? argv[optind + 2] : NULL);
}

int cmd_node(int argc, char **argv)
{
	return members_cmd(argc, argv, true);
}

int cmd_shard(int argc, char **argv)
{
	return members_cmd(argc, argv, false);
}
