/* auth.h — the one Authorization header latscope sends, on every request to the server
 * (generation requests, /v1/models, /tokenize, /detokenize, /metrics, /server_info), as vLLM's
 * client does: "Authorization: Bearer $OPENAI_API_KEY" when the variable is set. */
#ifndef LATSCOPE_AUTH_H
#define LATSCOPE_AUTH_H

#include <stddef.h>

/* Writes the header line (no CRLF) into buf; 1 when written, 0 when OPENAI_API_KEY is unset or
 * empty, -ENAMETOOLONG when the key does not fit cap. */
int ls_auth_header(char *buf, size_t cap);

#endif
