// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the TLS keys of the cluster file (docs/security.md,
 * TLS): tls_listen, tls_address, tls_cert, tls_key, tls_ca, tls_auth_clients in
 * [controller], tls_cert/tls_key/tls_ca in [agent], tls, tls_ca, tls_cert, tls_key,
 * tls_server_name in [redis]. The input's lines go into a valid cluster file, each
 * line's first byte choosing its section, so that nearly every input reaches the TLS
 * keys and their cross-checks rather than failing on the rest of the file. Checks
 * the contract on success: TLS on means a certificate, a CA where one is needed,
 * an address agents can dial (not a wildcard, not a unix socket), every file path
 * absolute, a certificate only with its key; on failure one terminated message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/config.h"
#include "common/tls.h"

static const char base[] = "[cluster]\nname = f\nsecret = fuzz-fuzz-fuzz-fuzz\n"
			   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
			   "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
			   "[shard \"s\"]\nnodes = n1 n2\n";
static const char *const sects[] = {"[controller]\n", "[agent]\n", "[redis]\n"};

static void check_paths(const struct cfg_tls *t)
{
	if ((t->cert[0] && t->cert[0] != '/') || (t->key[0] && t->key[0] != '/') ||
	    (t->ca[0] && t->ca[0] != '/'))
		abort();
	if (!t->cert[0] != !t->key[0])
		abort();
}

static void check(const struct cfg *c)
{
	const struct cfg_endpoint *ep = tls_controller_ep(c);

	check_paths(&c->agent.tls);
	check_paths(&c->controller.tls_files);
	check_paths(&c->redis.tls_files);
	if (c->controller.tls) {
		if (!c->controller.tls_files.cert[0] || !ep->host[0] || ep->unix_path[0] ||
		    !strcmp(ep->host, "0.0.0.0") || !strcmp(ep->host, "::") ||
		    c->controller.tls_listen.unix_path[0])
			abort();
		if (c->controller.tls_auth_clients != CFG_TLS_AUTH_NO &&
		    !c->controller.tls_files.ca[0])
			abort();
		if ((unsigned)c->controller.tls_auth_clients > CFG_TLS_AUTH_OPTIONAL)
			abort();
	} else if (c->controller.tls_files.cert[0] || ep != &c->controller.address) {
		abort();
	}
	if (c->redis.tls && !c->redis.tls_files.ca[0])
		abort();
	if (!c->redis.tls && (c->redis.tls_files.ca[0] || c->redis.tls_files.cert[0]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Each input line becomes a section header plus the line: at most 16 bytes more. */
	size_t cap = sizeof(base) + size * 17 + 2, n = sizeof(base) - 1;
	char *text = malloc(cap), err[256];
	struct cfg *c = NULL;
	int rc;

	if (!text)
		return 0;
	memcpy(text, base, n);
	for (size_t i = 0; i < size;) {
		const char *s = sects[data[i] % 3];
		size_t j = i + 1;

		while (j < size && data[j] != '\n')
			j++;
		memcpy(text + n, s, strlen(s));
		n += strlen(s);
		memcpy(text + n, data + i + 1, j - i - 1);
		n += j - i - 1;
		text[n++] = '\n';
		i = j + 1;
	}
	text[n] = '\0';
	memset(err, 'x', sizeof(err));
	err[0] = '\0';
	rc = cfg_load_string("fuzz.conf", text, &c, err, sizeof(err));
	if (rc > 0 || (rc == 0 && !c) || !memchr(err, '\0', sizeof(err)))
		abort();
	if (rc == 0) {
		check(c);
		cfg_free(c);
	}
	free(text);
	return 0;
}
