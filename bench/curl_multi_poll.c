/* SPDX-License-Identifier: MIT */
/* curl_get's reference (issue 32): the same 10,000 GETs over 50
 * connections as bench_curl.c, driven by libcurl's own loop -
 * curl_multi_perform, then curl_multi_poll until something happens - the
 * loop libcurl's documentation and examples give, no fut. The same 50
 * easy handles with the same options, the same multi option
 * (CURLMOPT_MAXCONNECTS 50), the same warm-up (one transfer per handle:
 * the connections are opened there) and checks (CURLE_OK, status 200,
 * the body's byte count). A handle whose transfer is done is removed and
 * added again while transfers remain to be claimed, as bench_curl.c's
 * task runs its next transfer.
 *
 *   BENCH_PORT=<nginx's port> curl_multi_poll
 * prints 'RESULT bench=curl_get peer=curl config=multi_poll ...'
 * (bench/client.h). Plain C against libcurl, built with the benchmarks
 * when fut's libcurl adapter is (bench/CMakeLists.txt).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "client.h"

#define CG_CONNS 50
#define CG_TRANSFERS 10000
#define CG_BODY 5 /* "hello" */

static size_t bytes; /* body bytes received */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    bytes += size * n;
    return size * n;
}

/* Runs 'total' transfers over the handles; returns the connections curl
 * opened meanwhile. */
static long phase(CURLM *cm, CURL **easy, int total)
{
    int claimed = 0, done = 0, running = 0;
    long new_conns = 0;
    for (int i = 0; i < CG_CONNS && claimed < total; i++, claimed++)
        CLIENT_CHECK(curl_multi_add_handle(cm, easy[i]) == CURLM_OK,
                     "curl_multi_add_handle failed");
    while (done < total) {
        CLIENT_CHECK(curl_multi_perform(cm, &running) == CURLM_OK,
                     "curl_multi_perform failed");
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(cm, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *e = msg->easy_handle;
            CURLcode code = msg->data.result;
            CLIENT_CHECK(code == CURLE_OK, "curl_get: transfer failed: %s",
                         curl_easy_strerror(code));
            long status = 0, conns = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns);
            CLIENT_CHECK(status == 200, "curl_get: HTTP status %ld", status);
            new_conns += conns;
            done++;
            curl_multi_remove_handle(cm, e);
            if (claimed < total) {
                claimed++;
                CLIENT_CHECK(curl_multi_add_handle(cm, e) == CURLM_OK,
                             "curl_multi_add_handle failed");
            }
        }
        if (done < total)
            CLIENT_CHECK(curl_multi_poll(cm, NULL, 0, 1000, NULL) == CURLM_OK,
                         "curl_multi_poll failed");
    }
    return new_conns;
}

int main(void)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/",
             client_port("BENCH_PORT", "nginx"));
    CLIENT_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK,
                 "curl_global_init failed");
    CURLM *cm = curl_multi_init();
    CLIENT_CHECK(cm != NULL, "curl_multi_init failed");
    curl_multi_setopt(cm, CURLMOPT_MAXCONNECTS, (long)CG_CONNS);
    CURL *easy[CG_CONNS];
    for (int i = 0; i < CG_CONNS; i++) {
        easy[i] = curl_easy_init();
        CLIENT_CHECK(easy[i] != NULL, "curl_easy_init failed");
        curl_easy_setopt(easy[i], CURLOPT_URL, url);
        curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(easy[i], CURLOPT_WRITEDATA, NULL);
        curl_easy_setopt(easy[i], CURLOPT_NOSIGNAL, 1L);
    }
    phase(cm, easy, CG_CONNS); /* warm-up: opens the connections */
    CLIENT_CHECK(bytes == (size_t)CG_CONNS * CG_BODY,
                 "curl_get: warm-up got %zu body bytes", bytes);
    bytes = 0;
    struct client_meter m;
    client_meter_start(&m);
    long new_conns = phase(cm, easy, CG_TRANSFERS);
    char extra[64];
    snprintf(extra, sizeof extra, "new_conns=%ld", new_conns);
    client_report(&m, "curl_get", "curl", "multi_poll", CG_TRANSFERS,
                  "transfers_per_s", CG_CONNS, extra);
    CLIENT_CHECK(bytes == (size_t)CG_TRANSFERS * CG_BODY,
                 "curl_get: got %zu body bytes, not %d", bytes,
                 CG_TRANSFERS * CG_BODY);
    for (int i = 0; i < CG_CONNS; i++)
        curl_easy_cleanup(easy[i]);
    curl_multi_cleanup(cm);
    curl_global_cleanup();
    return 0;
}
