// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline status` and `flatline failover`: ask the running controller, on its
 * listen address, with FLATLINE STATUS and (authenticated) FLATLINE FAILOVER. */
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
	    {"config", required_argument, NULL, 'c'}, {extra, has_arg, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},	      {"tls", no_argument, NULL, 'T'},
	    {"cacert", required_argument, NULL, 'A'}, {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},    {0},
	};
	int opt;

	o->config = STATUS_DEFAULT_CONFIG;
	o->extra = NULL;
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
    "usage: flatline failover SHARD [--to NODE] [-c FILE]\n"
    "\n"
    "Planned switchover: writes paused on the primary (CLIENT PAUSE WRITE), the target\n"
    "waited for until it has every write, promoted, the others repointed, writes\n"
    "resumed. No acknowledged write is lost. Prints the timeline.\n"
    "\n"
    "  --to NODE          the replica to promote (default: the best one)\n"
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
	if (to)
		rep = cli_command(rc, "FLATLINE FAILOVER %s %s", shard, to);
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
