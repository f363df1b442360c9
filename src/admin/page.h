/* page: the status page (private to src/admin/): GET / on the admin
 * listener, plain HTML with a stylesheet and a small script of its own
 * (/status.css, /status.js, embedded in the binary: no framework, no
 * external asset) that fetches /verdict, /held and /metrics every few
 * seconds and redraws in place. Every value is written with textContent,
 * never as markup, and the Content-Security-Policy allows only the
 * gate's own script: a client's User-Agent cannot become code. */
#ifndef SKEWGATE_ADMIN_PAGE_H
#define SKEWGATE_ADMIN_PAGE_H

struct evhttp_request;

void page_html(void *arg, struct evhttp_request *req);
void page_script(void *arg, struct evhttp_request *req);
void page_style(void *arg, struct evhttp_request *req);

#endif
