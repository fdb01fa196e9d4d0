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
