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
#include "common/config.h"
#include "common/log.h"

#define STATUS_DEFAULT_CONFIG "/etc/flatline/cluster.conf"

/* The controllers to ask, in order: [controller] listen, or in HA mode each
 * [controller "id"]. */
static int n_controllers(const struct cfg *cfg)
{
	return cfg->etcd.enabled ? cfg->nctls : 1;
}

static const struct cfg_endpoint *controller_ep(const struct cfg *cfg, int i)
{
	return cfg->etcd.enabled ? &cfg->ctls[i].listen : &cfg->controller.address;
}

static redisContext *connect_one(const struct cfg_endpoint *ep, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000 };
	redisContext *rc;

	if (ep->unix_path[0])
		rc = redisConnectUnixWithTimeout(ep->unix_path, tv);
	else
		rc = redisConnectWithTimeout(ep->host, ep->port, tv);
	if (!rc || rc->err) {
		pr_warn("failed to connect to the controller at %s:%d: %s\n",
			ep->unix_path[0] ? ep->unix_path : ep->host, ep->port,
			rc ? rc->errstr : "out of memory");
		if (rc)
			redisFree(rc);
		return NULL;
	}
	return rc;
}

/* The first controller from *next on that accepts a connection; *next moves past it. */
static redisContext *connect_controller(const struct cfg *cfg, int timeout_ms, int *next)
{
	while (*next < n_controllers(cfg)) {
		redisContext *rc = connect_one(controller_ep(cfg, (*next)++), timeout_ms);

		if (rc)
			return rc;
	}
	return NULL;
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
	const char *extra; /* the extra option's argument ("" when it takes none) */
};

static int parse_opts(int argc, char **argv, const char *usage, const char *extra, int has_arg,
		      int nargs, struct ctl_cmd_opts *o)
{
	const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ extra, has_arg, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	o->config = STATUS_DEFAULT_CONFIG;
	o->extra = NULL;
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
static int print_answer(redisContext *rc, redisReply *rep, const char *what)
{
	int ret = 1;

	if (!rep) {
		pr_warn("failed to %s: %s\n", what, rc->errstr);
	} else if (rep->type == REDIS_REPLY_STRING) {
		fwrite(rep->str, 1, rep->len, stdout);
		ret = 0;
	} else {
		pr_warn("failed to %s: %s\n", what,
			rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	}
	if (rep)
		freeReplyObject(rep);
	redisFree(rc);
	return ret;
}

static const char status_usage[] =
	"usage: flatline status [-c FILE] [--json]\n"
	"\n"
	"  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG "): where the\n"
	"                     controller listens\n"
	"  --json             one JSON object instead of the table\n";

int cmd_status(int argc, char **argv)
{
	struct ctl_cmd_opts o;
	struct cfg *cfg;
	redisContext *rc;
	int ret, next = 0;

	ret = parse_opts(argc, argv, status_usage, "json", no_argument, 0, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = 1;
	cfg = load(o.config);
	if (!cfg)
		return 1;
	rc = connect_controller(cfg, 2000, &next);
	if (rc) {
		redisReply *rep = redisCommand(rc, "FLATLINE STATUS %s", o.extra ? "JSON" : "TEXT");

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
	"  -c, --config FILE  the cluster file (default " STATUS_DEFAULT_CONFIG ")\n";

int cmd_failover(int argc, char **argv)
{
	struct ctl_cmd_opts o;
	const char *to, *shard;
	char what[512];
	struct cfg *cfg;
	redisContext *rc;
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
	rc = connect_controller(cfg, 2000, &next);
	if (!rc)
		goto cleanup;
	{
		struct timeval tv = { 60, 0 }; /* the switchover is bounded well below this */

		redisSetTimeout(rc, tv);
	}
	rep = redisCommand(rc, "AUTH %s", cfg->secret);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		pr_warn("failed to authenticate to the controller: %s\n",
			rep ? rep->str : rc->errstr);
		if (rep)
			freeReplyObject(rep);
		redisFree(rc);
		goto cleanup;
	}
	freeReplyObject(rep);
	if (to)
		rep = redisCommand(rc, "FLATLINE FAILOVER %s %s", shard, to);
	else
		rep = redisCommand(rc, "FLATLINE FAILOVER %s", shard);
	if (rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOTLEADER", 9) &&
	    next < n_controllers(cfg)) {
		/* HA mode: a follower; ask the next controller. */
		freeReplyObject(rep);
		redisFree(rc);
		goto again;
	}
	ret = print_answer(rc, rep, what);
cleanup:
	cfg_free(cfg);
	return ret;
}
