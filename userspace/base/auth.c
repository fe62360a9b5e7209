/* auth.c — see auth.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/auth.h"

int ls_auth_header(char *buf, size_t cap)
{
	const char *key = getenv("OPENAI_API_KEY");
	if (!key || !*key)
		return 0;
	int n = snprintf(buf, cap, "Authorization: Bearer %s", key);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 1;
}
