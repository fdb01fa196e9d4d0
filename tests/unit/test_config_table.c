// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The table of keys (common/config_table.c): against the manual
 * (docs/man/flatline.conf.5.md: every key documented with what a SIGHUP does, every
 * documented key in the table), the defaults, the bounds (errors with file:line), the
 * diff, and a reload's per-key outcome for each daemon (common/config_reload.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "common/config.h"

#define BASE                                                                                       \
	"[cluster]\nsecret = 0123456789abcdef\n"                                                   \
	"[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"                               \
	"[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"                               \
	"[shard \"s\"]\nnodes = n1 n2\n"

static const char *sect_heading(const struct cfg_key *k)
{
	switch (k->sect) {
	case CFG_S_CTL:
		return "controller \"ID\"";
	case CFG_S_NODE:
		return "node \"ID\"";
	case CFG_S_SHARD:
		return "shard \"NAME\"";
	case CFG_S_USER:
		return "user \"NAME\"";
	default:
		return cfg_sect_name(k->sect);
	}
}

static char *read_manual(void)
{
	static const char *const paths[] = {"docs/man/flatline.conf.5.md",
					    "../docs/man/flatline.conf.5.md",
					    "../../docs/man/flatline.conf.5.md"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		FILE *f = fopen(paths[i], "r");
		char *buf;
		long n;

		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		rewind(f);
		buf = calloc(1, n + 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, n, f), (size_t)n);
		fclose(f);
		return buf;
	}
	fail_msg("docs/man/flatline.conf.5.md not found");
	return NULL;
}

/* Each "`key`[, `key`]" line under "# [section]", with its paragraph's "On SIGHUP:". */
static void test_manual(void **state)
{
	char *man = read_manual(), *line, *save = NULL, sect[64] = "", para[2048] = "";
	char keys[8][40];
	int nkeys = 0, documented[256] = {0};

	(void)state;
	assert_true(cfg_nkeys < 256);
	for (line = strtok_r(man, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		bool key_line = line && line[0] == '`' && line[strlen(line) - 1] == '`';
		bool heading = line && !strncmp(line, "# ", 2);

		if (!line || key_line || heading || strncmp(line, "    ", 4)) {
			/* the paragraph of the keys before ends */
			for (int i = 0; i < nkeys; i++) {
				const struct cfg_key *k = NULL;
				char want[200], txt[120];

				for (int j = 0; j < cfg_nkeys && !k; j++)
					if (!strcmp(sect_heading(&cfg_keys[j]), sect) &&
					    !strcmp(cfg_keys[j].name, keys[i]))
						k = &cfg_keys[j];
				if (!k)
					fail_msg("[%s] %s is in the manual, not in the table", sect,
						 keys[i]);
				documented[k - cfg_keys] = 1;
				snprintf(want, sizeof(want), "On SIGHUP: %s.",
					 cfg_key_reload_text(k, txt, sizeof(txt)));
				if (!strstr(para, want))
					fail_msg("[%s] %s: the manual does not say \"%s\"", sect,
						 keys[i], want);
			}
			nkeys = 0;
			para[0] = '\0';
		}
		if (!line)
			break;
		if (heading) {
			sect[0] = '\0';
			if (line[2] == '[' && line[strlen(line) - 1] == ']')
				snprintf(sect, sizeof(sect), "%.*s", (int)strlen(line) - 4,
					 line + 3);
		} else if (key_line && sect[0]) {
			for (char *p = line; (p = strchr(p, '`')) && nkeys < 8;) {
				char *e = strchr(p + 1, '`');

				snprintf(keys[nkeys++], sizeof(keys[0]), "%.*s", (int)(e - p - 1),
					 p + 1);
				p = e + 1;
			}
		} else if (nkeys && !strncmp(line, "    ", 4)) {
			snprintf(para + strlen(para), sizeof(para) - strlen(para), " %s", line + 4);
		}
	}
	for (int i = 0; i < cfg_nkeys; i++)
		if (!documented[i])
			fail_msg("[%s] %s is in the table, not in the manual",
				 sect_heading(&cfg_keys[i]), cfg_keys[i].name);
	free(man);
}

/* Every row with a default: a file without the key has it. */
static void test_defaults(void **state)
{
	struct cfg *c = NULL;
	char err[256];

	(void)state;
	assert_int_equal(cfg_load_string("t", BASE, &c, err, sizeof(err)), 0);
	for (int i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		const char *base =
		    k->sect == CFG_S_NODE ? (const char *)&c->nodes[0] : (const char *)c;

		if (!k->def || (k->sect != CFG_S_NODE && k->sect > CFG_S_ETCD))
			continue;
		if (k->type == CFG_T_INT)
			assert_int_equal(*(const int *)(base + k->off), atoi(k->def));
		else if (k->type == CFG_T_BOOL)
			assert_int_equal(*(const bool *)(base + k->off), !strcmp(k->def, "yes"));
		else if (k->type == CFG_T_STR || k->type == CFG_T_PATH)
			assert_string_equal(base + k->off, k->def);
	}
	assert_string_equal(c->dns.tsig_algorithm, "hmac-sha256");
	assert_string_equal(c->controller.listen.host, "127.0.0.1");
	assert_int_equal(c->controller.listen.port, 26379);
	assert_int_equal(c->agent.self_fence_after_ms, 2 * c->agent.peer_down_after_ms);
	cfg_free(c);
}

static const char *sect_text(const struct cfg_key *k)
{
	return k->sect == CFG_S_NODE ? "node \"n1\"" : cfg_sect_name(k->sect);
}

/* Every integer row: its bounds are accepted, one past them is refused with the
 * file, line, section and key; and a change of it is what cfg_diff reports. */
static void on_diff(void *ctx, enum cfg_sect sect, const char *section, const char *key,
		    const struct cfg_key *row)
{
	char *out = ctx;

	(void)sect;
	(void)row;
	snprintf(out + strlen(out), 256 - strlen(out), "%s %s;", section, key);
}

static void test_bounds_and_diff(void **state)
{
	char text[2048], err[256], want[256], diff[256];
	struct cfg *base = NULL, *c = NULL;

	(void)state;
	assert_int_equal(cfg_load_string("t", BASE, &base, err, sizeof(err)), 0);
	for (int i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		/* the key on line 2 of its section, put first in the file */
		const char *fmt =
		    k->sect == CFG_S_NODE
			? "[node \"n1\"]\n%s = %ld\naddress = 10.0.0.1\nredis = "
			  "10.0.0.1:6379\n[cluster]\nsecret = 0123456789abcdef\n"
			  "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
			  "[shard \"s\"]\nnodes = n1 n2\n"
		    : k->sect == CFG_S_DNS
			? "[%s]\n%s = %ld\nzone = ha.example.\ntsig_name = k\ntsig_secret = "
			  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n" BASE
			: "[%s]\n%s = %ld\n" BASE;

		if (k->type != CFG_T_INT || (k->sect != CFG_S_NODE && k->sect > CFG_S_ETCD) ||
		    k->sect == CFG_S_ETCD)
			continue;
		for (int edge = 0; edge < 4; edge++) {
			long v = edge == 0   ? k->lo
				 : edge == 1 ? k->hi
				 : edge == 2 ? k->lo - 1
					     : k->hi + 1;

			if (k->sect == CFG_S_NODE)
				snprintf(text, sizeof(text), fmt, k->name, v);
			else
				snprintf(text, sizeof(text), fmt, cfg_sect_name(k->sect), k->name,
					 v);
			if (edge < 2) {
				if (cfg_load_string("t.conf", text, &c, err, sizeof(err)))
					fail_msg("[%s] %s = %ld: %s", sect_text(k), k->name, v,
						 err);
				diff[0] = '\0';
				if (k->sect != CFG_S_DNS &&
				    v != *(const int *)((const char *)(k->sect == CFG_S_NODE
									   ? (void *)&base->nodes[0]
									   : (void *)base) +
							k->off)) {
					snprintf(want, sizeof(want), "[%s] %s;", sect_text(k),
						 k->name);
					cfg_diff(base, c, on_diff, diff);
					/* self_fence_after_ms follows peer_down_after_ms,
					 * which follows probe_interval_ms */
					if (strcmp(k->name, "peer_down_after_ms") &&
					    strcmp(k->name, "probe_interval_ms"))
						assert_string_equal(diff, want);
					else
						assert_non_null(strstr(diff, want));
				}
				cfg_free(c);
				c = NULL;
				continue;
			}
			assert_int_not_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)),
					     0);
			snprintf(want, sizeof(want),
				 "t.conf:2: [%s] %s: %ld is out of range (%ld to %ld)",
				 sect_text(k), k->name, v, k->lo, k->hi);
			assert_string_equal(err, want);
		}
	}
	cfg_free(base);
}

static struct cfg *load(const char *extra)
{
	char text[2048], err[256];
	struct cfg *c = NULL;

	snprintf(text, sizeof(text), "%s%s", BASE, extra);
	if (cfg_load_string("t", text, &c, err, sizeof(err)))
		fail_msg("%s", err);
	return c;
}

static int dones;
static void on_done(void *ctx)
{
	(void)ctx;
	dones++;
}

/* The brief's case: stop_grace_ms and heartbeat_ms changed, both applied by the agent;
 * the controller applies heartbeat_ms and says nothing of stop_grace_ms; lease_ms is
 * the controller's to apply and needs the agent's restart; a heartbeat not below the
 * down-after time is refused by both; a node key is applied by both. */
static void test_reload(void **state)
{
	struct cfg_reload ra = {.proc = CFG_P_AGENT, .who = "agent", .done = on_done};
	struct cfg_reload rc = {.proc = CFG_P_CONTROLLER, .who = "controller", .done = on_done};
	struct cfg *old, *new;

	(void)state;
	old = load("[agent]\nstop_grace_ms = 50\nheartbeat_ms = 100\n");
	new = load("[agent]\nstop_grace_ms = 200\nheartbeat_ms = 150\n");
	cfg_reload_run(&ra, old, new, "t");
	assert_int_equal(ra.changed, 2);
	assert_string_equal(ra.applied, "[agent] heartbeat_ms, [agent] stop_grace_ms");
	assert_string_equal(ra.restart, "");
	assert_int_equal(old->agent.stop_grace_ms, 200);
	assert_int_equal(old->agent.heartbeat_ms, 150);
	cfg_free(old);
	old = load("[agent]\nstop_grace_ms = 50\nheartbeat_ms = 100\n");
	cfg_reload_run(&rc, old, new, "t");
	assert_string_equal(rc.applied, "[agent] heartbeat_ms");
	assert_string_equal(rc.restart, "");
	assert_int_equal(old->agent.stop_grace_ms, 50); /* not the controller's */
	cfg_free(old);
	cfg_free(new);

	old = load("[agent]\nlease_ms = 500\n");
	new = load("[agent]\nlease_ms = 3000\n");
	cfg_reload_run(&ra, old, new, "t");
	assert_string_equal(ra.applied, "");
	assert_string_equal(ra.restart, "[agent] lease_ms");
	assert_int_equal(old->agent.lease_ms, 500); /* the agent runs with its own */
	cfg_reload_run(&rc, old, new, "t");
	assert_string_equal(rc.applied, "[agent] lease_ms");
	assert_int_equal(old->agent.lease_ms, 3000);
	cfg_free(old);
	cfg_free(new);

	old = load("");
	new = load("[agent]\nheartbeat_ms = 1000\n");
	cfg_reload_run(&ra, old, new, "t");
	assert_int_equal(ra.nrefused, 1);
	assert_non_null(strstr(ra.refused, "[agent] heartbeat_ms: [agent] heartbeat_ms 1000 is "
					   "not below [controller] node_down_after_ms 300"));
	assert_int_equal(old->agent.heartbeat_ms, 100);
	cfg_free(new);
	new = load("[controller]\nnode_down_after_ms = 50\n");
	cfg_reload_run(&rc, old, new, "t");
	assert_int_equal(rc.nrefused, 1);
	assert_int_equal(old->controller.node_down_after_ms, 300);
	cfg_free(new);

	dones = 0;
	new = load("[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\nkey = "
		   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
	cfg_reload_run(&ra, old, new, "t");
	assert_string_equal(ra.restart, "[node \"n3\"] *");
	cfg_free(new);
	new = load("");
	strcpy(new->nodes[1].key,
	       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
	cfg_reload_run(&rc, old, new, "t");
	assert_string_equal(rc.applied, "[node \"n2\"] key");
	assert_string_equal(old->nodes[1].key, new->nodes[1].key);
	assert_int_equal(dones, 1);
	cfg_free(old);
	cfg_free(new);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_manual),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_bounds_and_diff),
	    cmocka_unit_test(test_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
