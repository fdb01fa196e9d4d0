// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline import [FILE...] [--sentinel HOST:PORT...] [-o FILE]`: a cluster file from
 * a Sentinel deployment. Sources are sentinel.conf files (common/sentinel_conf.c) and
 * live Sentinels (import_live.c); several describe one deployment: for each master the
 * source with the highest config-epoch gives the primary, the replicas are the union.
 * One [shard] per master (its name: clients ask the controller by it), its servers as
 * [node "NAME-1"] (the primary as the sources see it), ... Settings that flatline's
 * cluster file holds once ([redis] credentials, [controller] timings and scripts) take
 * the value most masters have; the others are listed in a comment, and credentials that
 * differ between masters (or renamed commands) need --force. Every Sentinel option
 * with nothing to map is listed with the reason. The text is validated with the
 * cluster file's own reader before it is written: 0600, a temporary file renamed
 * without replacing anything. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/import.h"
#include "cmds.h"
#include "common/config.h"
#include "common/log.h"

static const char usage[] =
    "usage: flatline import [FILE...] [--sentinel HOST:PORT...] [-o FILE] [--force]\n"
    "\n"
    "Writes a cluster file from a Sentinel deployment: its sentinel.conf files (as the\n"
    "Sentinels rewrote them: known-replica, known-sentinel) and/or live Sentinels\n"
    "(SENTINEL MASTERS, REPLICAS, SENTINELS). One [shard] per monitored master, its\n"
    "servers as nodes, a fresh [cluster] secret; what has no equivalent is listed in\n"
    "comments.\n"
    "  -s, --sentinel HOST:PORT  ask this Sentinel (repeatable; port 26379 if left out)\n"
    "  --sentinel-user USER      ACL user for the Sentinels (the password from the\n"
    "                            environment: FLATLINE_SENTINEL_PASSWORD)\n"
    "  -t, --timeout MS          each connect and reply of a Sentinel (default 2000)\n"
    "  -o, --output FILE         write FILE (mode 0600; never replaces one); default stdout\n"
    "  -f, --force               write even when the file needs a decision (a master\n"
    "                            without auth-pass beside ones with it, renamed commands)\n"
    "\n"
    "Exit status: 0 written, 1 an error (file:line for a bad sentinel.conf) or a decision\n"
    "needed, 2 usage.\n";

static int new_secret(char *hex, size_t len)
{
	unsigned char b[24];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += n;
	}
	for (size_t i = 0; i < sizeof(b) && 2 * i + 2 < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* text into path: a 0600 temporary file beside it, fsync'd, renamed to path unless
 * path exists (RENAME_NOREPLACE). */
static int write_file(const char *path, const char *text, size_t len)
{
	char tmp[4200], dir[4096];
	int fd, rc = 0;
	size_t off = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(tmp, sizeof(tmp), "%s/.flatline-import.XXXXXX", dirname(dir));
	fd = mkostemp(tmp, O_CLOEXEC); /* 0600, O_EXCL */
	if (fd < 0) {
		pr_warn("import: failed to create a file beside %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -errno;
			break;
		}
		off += n;
	}
	if (!rc && (fchmod(fd, 0600) || fsync(fd)))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE))
		rc = -errno;
	if (rc) {
		pr_warn("import: failed to write %s: %s\n", path,
			rc == -EEXIST ? "it exists (import never replaces a file: remove it or "
					"choose another -o)"
				      : strerror(-rc));
		unlink(tmp);
	}
	return rc;
}

/* Each "- NEEDS A DECISION" comment of text on stderr: its lines. */
static void print_decisions(const char *text)
{
	bool in = false;

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		int n = nl ? (int)(nl - l) : (int)strlen(l);

		in = (in && !strncmp(l, ";   ", 4)) || !strncmp(l, "; - NEEDS A DECISION", 20);
		if (in)
			fprintf(stderr, "  %.*s\n", n, l);
		l = nl ? nl + 1 : NULL;
	}
}

int cmd_import(int argc, char **argv)
{
	static const struct option lopts[] = {{"sentinel", required_argument, NULL, 's'},
					      {"sentinel-user", required_argument, NULL, 'u'},
					      {"timeout", required_argument, NULL, 't'},
					      {"output", required_argument, NULL, 'o'},
					      {"force", no_argument, NULL, 'f'},
					      {"help", no_argument, NULL, 'h'},
					      {0}};
	const char *live[IMP_MAX_SOURCES], *output = NULL, *user = NULL;
	const char *pass = getenv("FLATLINE_SENTINEL_PASSWORD");
	int nlive = 0, timeout_ms = 2000, opt, rc = 1;
	struct imp *im = calloc(1, sizeof(*im));
	char err[600], secret[64] = "", *text = NULL, *end;
	struct cfg *cfg = NULL;
	size_t len = 0;

	if (!im)
		return 1;
	while ((opt = getopt_long(argc, argv, "s:t:o:fh", lopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (nlive == IMP_MAX_SOURCES)
				goto usage;
			live[nlive++] = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 't':
			timeout_ms = (int)strtol(optarg, &end, 10);
			if (*end || timeout_ms < 1 || timeout_ms > 600000)
				goto usage;
			break;
		case 'o':
			output = strcmp(optarg, "-") ? optarg : NULL;
			break;
		case 'f':
			im->force = true;
			break;
		case 'h':
			fputs(usage, stdout);
			free(im);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind == argc && !nlive)
		goto usage;
	if (argc - optind + nlive > IMP_MAX_SOURCES)
		goto usage;
	for (int i = optind; i < argc; i++) {
		struct sc_conf *c = malloc(sizeof(*c));

		if (!c)
			goto cleanup;
		im->srcs[im->nsrcs++] = c;
		if (sc_parse_file(c, argv[i], err, sizeof(err))) {
			pr_warn("%s\n", err);
			goto cleanup;
		}
		if (!c->nmasters) {
			pr_warn("%s: no 'sentinel monitor' line: nothing to import\n", argv[i]);
			goto cleanup;
		}
	}
	for (int i = 0; i < nlive; i++) {
		struct sc_conf *c = malloc(sizeof(*c));

		if (!c)
			goto cleanup;
		im->srcs[im->nsrcs++] = c;
		if (import_live(c, live[i], timeout_ms, user, pass, err, sizeof(err))) {
			pr_warn("%s\n", err);
			goto cleanup;
		}
	}
	if (import_merge(im) || new_secret(secret, sizeof(secret)) ||
	    import_emit(im, secret, &text, &len))
		goto cleanup;
	/* What `flatline check` will say: the same reader. */
	if (cfg_load_string(output ? output : "(stdout)", text, &cfg, err, sizeof(err))) {
		pr_warn("import: the cluster file would not validate: %s\n", err);
		goto cleanup;
	}
	if (im->decision && !im->force) {
		pr_warn("import: the file needs a decision (lines 'NEEDS A DECISION' "
			"below); nothing written. Resolve it, or write it anyway with --force.\n");
		print_decisions(text);
		goto cleanup;
	}
	if (output) {
		if (write_file(output, text, len))
			goto cleanup;
	} else if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) {
		goto cleanup;
	}
	rc = 0;
	goto cleanup;
usage:
	fputs(usage, stderr);
	rc = 2;
cleanup:
	cfg_free(cfg);
	free(text);
	for (int k = 0; k < im->nsrcs; k++)
		free(im->srcs[k]);
	free(im);
	explicit_bzero(secret, sizeof(secret));
	return rc;
}
