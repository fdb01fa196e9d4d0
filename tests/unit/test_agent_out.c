// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's outputs (user/agent/agent_out.c): every line reaches the event log and
 * is counted by the kind its record carries (flatline_agent_events_total), not by
 * what its JSON says. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "agent/agent_layers.h"

struct fixture {
	char dir[64];
	char path[96];
	struct agent a;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct evlog_opts o = {0};

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/fl-agent-out-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/events.jsonl", f->dir);
	o.path = f->path;
	f->a.node = "n1";
	f->a.event_log = f->path;
	if (evlog_open(&f->a.log, &o) || agent_out_open(&f->a))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	agent_out_close(&f->a);
	evlog_close(f->a.log);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void log_kind(struct agent *a, const char *kind)
{
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	/* A field that looks like a kind: counting must not read it. */
	evrec_str(&r, "detail", "\"kind\":\"not_a_kind\"");
	agent_out_log(a, &r);
}

static int lines(const char *path)
{
	FILE *fp = fopen(path, "r");
	int n = 0, c;

	if (!fp)
		return -1;
	while ((c = fgetc(fp)) != EOF)
		n += c == '\n';
	fclose(fp);
	return n;
}

static void test_counts_by_record_kind(void **state)
{
	struct fixture *f = *state;
	char longer[40];
	uint64_t n = 0;

	memset(longer, 'k', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	log_kind(&f->a, "proc_exit");
	log_kind(&f->a, "lease_lost");
	log_kind(&f->a, "proc_exit");
	log_kind(&f->a, NULL);	 /* "kind": null: written, not counted */
	log_kind(&f->a, longer); /* longer than a counter's kind: written, not counted */
	assert_int_equal(lines(f->path), 5);
	assert_string_equal(agent_out_count(&f->a, 0, &n), "proc_exit");
	assert_int_equal(n, 2);
	assert_string_equal(agent_out_count(&f->a, 1, &n), "lease_lost");
	assert_int_equal(n, 1);
	assert_null(agent_out_count(&f->a, 2, &n));
	assert_null(agent_out_count(&f->a, -1, &n));
}

static void test_kinds_past_the_table(void **state)
{
	struct fixture *f = *state;
	char kind[16];
	uint64_t n;
	int i;

	for (i = 0; i < 70; i++) {
		snprintf(kind, sizeof(kind), "kind_%d", i);
		log_kind(&f->a, kind);
	}
	log_kind(&f->a, "kind_0");
	for (i = 0; agent_out_count(&f->a, i, &n); i++)
		;
	assert_int_equal(i, 64); /* the first 64 kinds; the others only logged */
	assert_string_equal(agent_out_count(&f->a, 0, &n), "kind_0");
	assert_int_equal(n, 2);
	assert_int_equal(lines(f->path), 71);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_counts_by_record_kind, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_kinds_past_the_table, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
