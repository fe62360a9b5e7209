/* sim/sim_tls.c — the server's SSL_CTX: a certificate and key from files, or (--tls alone) a
 * self-signed ECDSA P-256 pair made at start for CN=localhost, SAN localhost/127.0.0.1/::1.
 * TLS 1.2 is the floor; --tls-max caps it at 1.2 or 1.3. */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include "sim/sim.h"

static void ssl_error(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];
	ERR_error_string_n(e, buf, sizeof(buf));
	fprintf(stderr, "latscope sim: %s: %s\n", what, e ? buf : "failed");
}

static int self_signed(SSL_CTX *ctx)
{
	int rc = -1;
	X509 *x = NULL;
	X509_EXTENSION *ext = NULL;
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!key)
		goto out;
	x = X509_new();
	if (!x || !X509_set_version(x, 2) || !ASN1_INTEGER_set(X509_get_serialNumber(x), 1) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 30L * 24 * 3600) || !X509_set_pubkey(x, key))
		goto out;
	X509_NAME *name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"latscope sim", -1, -1, 0) ||
	    !X509_set_issuer_name(x, name))
		goto out;
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1");
	if (!ext || !X509_add_ext(x, ext, -1))
		goto out;
	if (!X509_sign(x, key, EVP_sha256()))
		goto out;
	if (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1)
		goto out;
	rc = 0;
out:
	if (rc)
		ssl_error("making the self-signed certificate");
	X509_EXTENSION_free(ext);
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

SSL_CTX *sim_tls_ctx(const struct sim_config *cfg)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		ssl_error("SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (cfg->tls_max)
		SSL_CTX_set_max_proto_version(ctx, cfg->tls_max == 12 ? TLS1_2_VERSION : TLS1_3_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
			      SSL_MODE_RELEASE_BUFFERS);
	if (cfg->tls_cert) {
		if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1) {
			char what[512];
			snprintf(what, sizeof(what), "--tls-cert %s: cannot load the certificate (PEM expected)",
				 cfg->tls_cert);
			ssl_error(what);
			SSL_CTX_free(ctx);
			return NULL;
		}
		if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(ctx) != 1) {
			char what[512];
			snprintf(what, sizeof(what), "--tls-key %s: cannot load the key, or it does not match the certificate",
				 cfg->tls_key);
			ssl_error(what);
			SSL_CTX_free(ctx);
			return NULL;
		}
	} else if (self_signed(ctx)) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}
