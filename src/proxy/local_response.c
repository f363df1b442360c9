#include <pthread.h>
#include <stdio.h>

#include "proxy/local_response.h"

static const struct {
    int status;
    const char *text;
} local_statuses[] = {
    {400, "Bad Request"},
    {403, "Forbidden"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {414, "URI Too Long"},
    {431, "Request Header Fields Too Large"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};
#define LOCAL_N (sizeof local_statuses / sizeof local_statuses[0])

static char local_text[LOCAL_N][HTTP_CONN__COUNT][160];
static size_t local_len[LOCAL_N][HTTP_CONN__COUNT];
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_render(void)
{
    for (size_t i = 0; i < LOCAL_N; i++) {
        int status = local_statuses[i].status;
        for (int v = 0; v < HTTP_CONN__COUNT; v++) {
            int n = snprintf(local_text[i][v], sizeof local_text[i][v],
                             "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n%s%s\r\n", status, local_statuses[i].text,
                             status == 405 ? "Allow: GET, HEAD\r\n" : "",
                             http_connection_line((http_conn_variant_t)v, NULL));
            local_len[i][v] = (size_t)n;
        }
    }
}

const char *local_response(int *status, http_conn_variant_t v, size_t *len)
{
    pthread_once(&local_once, local_render);
    size_t i = 0;
    while (i < LOCAL_N && local_statuses[i].status != *status)
        i++;
    if (i == LOCAL_N) {
        i = 0;
        *status = 400;
    }
    if ((unsigned)v >= HTTP_CONN__COUNT)
        v = HTTP_CONN_CLOSE;
    *len = local_len[i][v];
    return local_text[i][v];
}

static char admission_text[ADMISSION__RESULTS][HTTP_CONN__COUNT][192];
static size_t admission_len[ADMISSION__RESULTS][HTTP_CONN__COUNT];
static pthread_once_t admission_once = PTHREAD_ONCE_INIT;

static void admission_render(void)
{
    for (int r = ADMISSION_PASS + 1; r < ADMISSION__RESULTS; r++) {
        int status = admission_reason_status((admission_result_t)r);
        size_t i = 0;
        while (i < LOCAL_N - 1 && local_statuses[i].status != status)
            i++;
        for (int v = 0; v < HTTP_CONN__COUNT; v++)
            admission_len[r][v] = (size_t)snprintf(
                admission_text[r][v], sizeof admission_text[r][v],
                "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nSkewgate-Reason: %s\r\n%s\r\n", status,
                local_statuses[i].text, admission_reason_name((admission_result_t)r),
                http_connection_line((http_conn_variant_t)v, NULL));
    }
}

const char *local_response_admission(admission_result_t r, http_conn_variant_t v, int *status, size_t *len)
{
    pthread_once(&admission_once, admission_render);
    if ((unsigned)r >= ADMISSION__RESULTS || r == ADMISSION_PASS)
        r = ADMISSION_BAD_PROXY_HEADER;
    if ((unsigned)v >= HTTP_CONN__COUNT)
        v = HTTP_CONN_CLOSE;
    *status = admission_reason_status(r);
    *len = admission_len[r][v];
    return admission_text[r][v];
}
