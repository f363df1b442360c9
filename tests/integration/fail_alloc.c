/* An LD_PRELOAD library for t_reload_worker_oom: while the file named by
 * SKEWGATE_FAIL_ALLOC exists, malloc, calloc and realloc fail (NULL,
 * ENOMEM) on every thread of the process but its main one, i.e. on the
 * gate's workers. Built by the test; not part of skewgate. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

/* getenv and access allocate nothing, so they may run inside malloc; a
 * missing file's ENOENT is not left in errno for the caller. */
static bool failing(void)
{
    const char *armed = getenv("SKEWGATE_FAIL_ALLOC");
    if (!armed || gettid() == getpid())
        return false;
    int saved = errno;
    bool fail = access(armed, F_OK) == 0;
    errno = fail ? ENOMEM : saved;
    return fail;
}

void *malloc(size_t size)
{
    return failing() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return failing() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return failing() ? NULL : __libc_realloc(p, size);
}
