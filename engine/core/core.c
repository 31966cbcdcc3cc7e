/* core.c — version, status names, error formatting, the allocation hook and file mapping.
 * Not a place for policy: every function here is mechanism used by the rest of engine/. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

const char *pl_version(void)
{
    return PLUMB_VERSION_STRING;
}

const char *pl_status_str(pl_status s)
{
    switch (s) {
    case PL_OK:
        return "PL_OK";
    case PL_ERR_INVALID_ARG:
        return "PL_ERR_INVALID_ARG";
    case PL_ERR_NOMEM:
        return "PL_ERR_NOMEM";
    case PL_ERR_IO:
        return "PL_ERR_IO";
    case PL_ERR_FORMAT:
        return "PL_ERR_FORMAT";
    case PL_ERR_UNSUPPORTED:
        return "PL_ERR_UNSUPPORTED";
    case PL_ERR_NOT_FOUND:
        return "PL_ERR_NOT_FOUND";
    case PL_ERR_TYPE:
        return "PL_ERR_TYPE";
    case PL_ERR_LIMIT:
        return "PL_ERR_LIMIT";
    case PL_ERR_CONFIG:
        return "PL_ERR_CONFIG";
    case PL_ERR_CONTEXT_FULL:
        return "PL_ERR_CONTEXT_FULL";
    case PL_ERR_CANCELLED:
        return "PL_ERR_CANCELLED";
    case PL_ERR_BUFFER_TOO_SMALL:
        return "PL_ERR_BUFFER_TOO_SMALL";
    }
    return "PL_ERR_UNKNOWN";
}

pl_status pl_fail(pl_error *err, pl_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void pl_error_prefix(pl_error *err, const char *prefix)
{
    if (!err || !prefix) return;
    char tmp[sizeof err->msg];
    size_t n = strlen(prefix);
    if (n > sizeof tmp - 3) n = sizeof tmp - 3;
    memcpy(tmp, prefix, n);
    memcpy(tmp + n, ": ", 2);
    size_t room = sizeof tmp - n - 3, m = strlen(err->msg);
    if (m > room) m = room;
    memcpy(tmp + n + 2, err->msg, m);
    tmp[n + 2 + m] = '\0';
    memcpy(err->msg, tmp, sizeof tmp);
}

pl_status pl_ok(pl_error *err)
{
    if (err) {
        err->code = PL_OK;
        err->msg[0] = '\0';
    }
    return PL_OK;
}

static pl_alloc_fail_fn alloc_hook;
static void *alloc_hook_user;

void pl_alloc_set_hook(pl_alloc_fail_fn fn, void *user)
{
    alloc_hook = fn;
    alloc_hook_user = user;
}

static int alloc_should_fail(void)
{
    return alloc_hook && alloc_hook(alloc_hook_user);
}

void *pl_malloc(size_t n)
{
    if (alloc_should_fail()) return NULL;
    return malloc(n ? n : 1);
}

void *pl_calloc(size_t count, size_t size)
{
    if (alloc_should_fail()) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *pl_realloc(void *p, size_t n)
{
    if (alloc_should_fail()) return NULL;
    return realloc(p, n ? n : 1);
}

void pl_free(void *p)
{
    free(p);
}

void pl_buffer_free(void *buf)
{
    pl_free(buf);
}

pl_status pl_map_file(pl_mapping *m, const char *path, pl_error *err)
{
    memset(m, 0, sizeof *m);
    if (!path) return pl_fail(err, PL_ERR_INVALID_ARG, "path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pl_fail(err, PL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return pl_fail(err, PL_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return pl_fail(err, PL_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return pl_fail(err, PL_ERR_LIMIT, "'%s' is too large to map (%lld bytes)", path,
                       (long long)st.st_size);
    }
    m->size = (size_t)st.st_size;
    if (m->size == 0) { /* mmap of 0 bytes fails; the parser reports the empty file */
        close(fd);
        m->data = "";
        return pl_ok(err);
    }
    void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        m->size = 0;
        return pl_fail(err, PL_ERR_IO, "cannot mmap '%s': %s", path, strerror(e));
    }
    m->data = p;
    m->is_mmap = 1;
    return pl_ok(err);
}

void pl_mapping_release(const pl_mapping *m, const void *p, size_t n)
{
    if (!m || !m->is_mmap || !p || n == 0) return;
    const uintptr_t base = (uintptr_t)m->data, page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (lo < base || hi < lo || hi > base + m->size || page == 0 || (page & (page - 1))) return;
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* read-only, file-backed */
}

void pl_unmap_file(pl_mapping *m)
{
    if (m && m->is_mmap) munmap((void *)m->data, m->size);
    if (m) memset(m, 0, sizeof *m);
}
