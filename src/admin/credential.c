#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "credential.h"
#include "core/log.h"

int credential_init(credential_t *c, const char *token_file, char *err, size_t errlen)
{
    *c = (credential_t){0};
    if (!token_file)
        return 0;
    if (kube_token_init(&c->token, token_file) < 0) {
        snprintf(err, errlen, "admin.token_file: out of memory");
        return -1;
    }
    char why[256];
    if (kube_token_refresh(&c->token, why, sizeof why) < 0) {
        snprintf(err, errlen, "admin.token_file: %s", why);
        credential_free(c);
        return -1;
    }
    return 0;
}

const char *credential_name(const credential_t *c)
{
    return c->token.path ? c->token.path : "";
}

void credential_free(credential_t *c)
{
    kube_token_free(&c->token);
}

/* The token's digest: compared, not the tokens, so that the time taken
 * depends on neither token's length nor content. */
static void credential_digest(const char *s, size_t len, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)s, len, out);
}

/* The file as of now. A file that cannot be read refuses every request
 * (a removed file revokes the token), logged once per distinct problem. */
static bool credential_current(credential_t *c)
{
    char why[256];
    if (kube_token_refresh(&c->token, why, sizeof why) < 0) {
        if (strcmp(why, c->error)) {
            snprintf(c->error, sizeof c->error, "%s", why);
            log_msg(LOG_WARN, "admin_token", "mutations over TCP refused: %s", why);
        }
        return false;
    }
    if (c->error[0])
        log_msg(LOG_INFO, "admin_token", "admin.token_file can be read again");
    c->error[0] = '\0';
    return true;
}

credential_result_t credential_check(credential_t *c, const char *authorization)
{
    if (!c->token.path)
        return CREDENTIAL_UNCONFIGURED;
    /* RFC 6750: the scheme is case-insensitive, one space, then the token. */
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) || !authorization[7])
        return CREDENTIAL_MISSING;
    if (!credential_current(c))
        return CREDENTIAL_UNREADABLE;
    const char *given = authorization + 7;
    unsigned char want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
    credential_digest(c->token.value, strlen(c->token.value), want);
    credential_digest(given, strlen(given), got);
    bool same = CRYPTO_memcmp(want, got, sizeof want) == 0;
    OPENSSL_cleanse(want, sizeof want);
    OPENSSL_cleanse(got, sizeof got);
    return same ? CREDENTIAL_OK : CREDENTIAL_WRONG;
}
