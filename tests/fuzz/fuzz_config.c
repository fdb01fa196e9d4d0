// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the cluster file (cfg_load_string, inih plus every key's
 * validation). The input becomes a NUL-terminated string in a buffer of exactly its
 * length + 1. Checks the contract: success gives a config to free and leaves err
 * alone or empty; failure gives no config and one NUL-terminated message in err. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[256];
	struct cfg *c = NULL;
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(err, 'x', sizeof(err));
	err[0] = '\0';
	rc = cfg_load_string("fuzz.conf", text, &c, err, sizeof(err));
	if (rc > 0 || (rc == 0 && !c) || !memchr(err, '\0', sizeof(err)))
		abort();
	if (rc == 0) {
		for (int i = 0; i < c->nshards; i++)
			for (int j = 0; j < c->shards[i].nnodes; j++)
				if (c->shards[i].nodes[j] < 0 || c->shards[i].nodes[j] >= c->nnodes)
					abort();
		cfg_free(c);
	}
	free(text);
	return 0;
}
