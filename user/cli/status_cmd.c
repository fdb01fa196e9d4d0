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
#include "common/config.h"
#include "common/log.h"
#include "common/tls.h"

#define STATUS_DEFAULT_CONFIG "/etc/flatline/cluster.conf"

/* The controllers to ask, in order: [controller] listen, or in HA mode each
 * [controller "id"]. */
static int n_controllers(const struct cfg *cfg)
{
	return cfg->etcd.enabled ? cfg->nctls : 1;
}

static const struct cfg_endpoint *controller_ep(const struct cfg *cfg, int i)
{
	return cfg->etcd.enabled ? &cfg->ctls[i].listen : tls_controller_ep(cfg);
}

/* The first controller from *next on that accepts a connection; *next moves past it.
 * TLS when the file has tls_listen or --tls was given. */
static struct cli_conn *connect_controller(const struct cfg *cfg, struct cli_tls *tls,
					   int timeout_ms, int *next)
{
	tls->on |= cfg->controller.tls;
	while (*next < n_controllers(cfg)) {
		struct cli_conn *rc = cli_connect(cfg, controller_ep(cfg, (*next)++), tls,
						  timeout_ms);

		if (rc)
			return rc;
	}
	return NULL;
}

/* --tls, --cacert, --cert, --key: 0 if opt is one of them. */
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
	if (optarg[0] != '/') {
		pr_warn("--%s: not an absolute path: '%s'\n",
			opt == 'A' ? "cacert" : opt == 'C' ? "cert" : "key", optarg);
		return 1;
	}
	tls->on = true;
	return 0;
}

#define TLS_LOPTS                                              \
	{ "tls", no_argument, NULL, 'T' },                     \
	{ "cacert", required_argument, NULL, 'A' },            \
	{ "cert", required_argument, NULL, 'C' },              \
	{ "key", required_argument, NULL, 'K' }
#define TLS_USAGE                                                                       \
	"  --tls              TLS to the controller (implied when the file has\n"          \
	"                     [controller] tls_listen)\n"                                  \
	"  --cacert FILE      the CA that signed the controller's certificate (default\n"  \
	"                     [agent] tls_ca, else [controller] tls_ca)\n"                 \
	"  --cert FILE, --key FILE  a client certificate and its key (default [agent]\n"  \
	"                     tls_cert and tls_key)\n"

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

static const char status_usage[] =
	"usage: flatline status [-c FILE] [--json]\n"
	"\n"
	"  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG "): where the\n"
	"                     controller listens\n"
	"  --json             one JSON object instead of the table\n" TLS_USAGE;

int cmd_status(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		TLS_LOPTS,
		{ 0 },
	};
	const char *path = STATUS_DEFAULT_CONFIG;
	bool json = false;
	struct cfg *cfg;
	struct cli_tls tls = { 0 };
	struct cli_conn *rc;
	redisReply *rep;
	int opt, ret = 1, next = 0;

	while ((opt = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(status_usage, stdout);
			return 0;
		default:
			if (!tls_opt(opt, &tls))
				break;
			fputs(status_usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(status_usage, stderr);
		return 2;
	}
	cfg = load(path);
	if (!cfg)
		return 1;
	rc = connect_controller(cfg, &tls, 2000, &next);
	if (!rc)
		goto cleanup;
	rep = cli_command(rc, "FLATLINE STATUS %s", json ? "JSON" : "TEXT");
	if (!rep) {
		pr_warn("failed to read the controller's status: %s\n", cli_errstr(rc));
	} else if (rep->type == REDIS_REPLY_STRING) {
		fwrite(rep->str, 1, rep->len, stdout);
		ret = 0;
	} else {
		pr_warn("failed to read the controller's status: %s\n",
			rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	}
	if (rep)
		freeReplyObject(rep);
	cli_free(rc);
cleanup:
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
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		TLS_LOPTS,
		{ 0 },
	};
	const char *path = STATUS_DEFAULT_CONFIG, *to = NULL, *shard;
	struct cfg *cfg;
	struct cli_tls tls = { 0 };
	struct cli_conn *rc;
	redisReply *rep;
	int opt, ret = 1, next = 0;

	while ((opt = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 't':
			to = optarg;
			break;
		case 'h':
			fputs(failover_usage, stdout);
			return 0;
		default:
			if (!tls_opt(opt, &tls))
				break;
			fputs(failover_usage, stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fputs(failover_usage, stderr);
		return 2;
	}
	shard = argv[optind];
	cfg = load(path);
	if (!cfg)
		return 1;
again:
	rc = connect_controller(cfg, &tls, 2000, &next);
	if (!rc)
		goto cleanup;
	cli_set_timeout(rc, 60000); /* the switchover is bounded well below this */
	rep = cli_command(rc, "AUTH %s", cfg->secret);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		pr_warn("failed to authenticate to the controller: %s\n",
			rep ? rep->str : cli_errstr(rc));
		if (rep)
			freeReplyObject(rep);
		cli_free(rc);
		goto cleanup;
	}
	freeReplyObject(rep);
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
	if (!rep) {
		pr_warn("failed to fail over %s: %s\n", shard, cli_errstr(rc));
	} else if (rep->type == REDIS_REPLY_STRING) {
		fwrite(rep->str, 1, rep->len, stdout);
		ret = 0;
	} else {
		pr_warn("failed to fail over %s: %s\n", shard,
			rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	}
	if (rep)
		freeReplyObject(rep);
	cli_free(rc);
cleanup:
	cfg_free(cfg);
	return ret;
}
