// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the handshake's parsers (common/auth.h). The input is split
 * at '\n' into up to 6 arguments: the controller's auth_hello_parse on them as a
 * HELLO, and the agent's check of a CHALLENGE proof (auth_unhex/auth_check) on
 * the last two. Contract: an accepted HELLO names a node of 1..64 safe bytes
 * (no CR/LF: it is logged) and a 32-byte nonce; a refusal says why; no proof
 * made up by the input is accepted. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[6];
	size_t lens[6];
	uint8_t na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN], key[AUTH_KEY_LEN];
	const char *node = NULL;
	char why[160] = "";
	int argc = 0, rc;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc] = buf;
	for (size_t i = 0; i <= size && argc < 6; i++) {
		if (i == size || buf[i] == '\n') {
			buf[i] = '\0';
			lens[argc] = (size_t)(buf + i - argv[argc]);
			argc++;
			if (argc < 6 && i < size)
				argv[argc] = buf + i + 1;
			else
				break;
		}
	}
	rc = auth_hello_parse(argc, (const char *const *)argv, lens, &node, na, why, sizeof(why));
	if (rc == 0) {
		size_t n = strlen(node);

		if (n == 0 || n > 64 || strpbrk(node, "\r\n \"\\"))
			abort();
	} else if ((rc != -EINVAL && rc != -EPROTONOSUPPORT) || !why[0]) {
		abort();
	}
	if (argc >= 2) {
		memset(key, 7, sizeof(key));
		memset(nc, 9, sizeof(nc));
		if (rc)
			memset(na, 3, sizeof(na));
		if (auth_check(key, AUTH_CONTROLLER, "n1", na, nc, argv[argc - 1], lens[argc - 1]))
			abort(); /* the input forged an HMAC */
		(void)auth_unhex(argv[argc - 2], lens[argc - 2], nc, sizeof(nc));
	}
	free(buf);
	return 0;
}
