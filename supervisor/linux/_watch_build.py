"""cffi (API mode) build of the exec watch's hot path: `supervisor.linux._watchc`.

Measured here (benchmarks/exec_watch.py; a bare C loop of RECV + CONTINUE adds about 20
us per exec, the same loop in Python about 80 us): most of the Python watch's cost is
the interpreter's own, between a receiver waking and the call going on. So the loop that
every exec passes through is C, run without the GIL: poll and receive under a lock
(leader and followers, as watch.py explains), read the path with process_vm_readv, read
a relative path's working directory, check the id is still valid, judge the file
through the sandbox's root with openat2(RESOLVE_IN_ROOT) by device and inode, and let
the call go on. It comes back to Python only for what needs a decision there: a refused
(or, for learn, any) program, a memory file to make, the end. A refusal comes back with
its call still waiting (`pending`): Python says it, then lets it go on
(`lnk_watch_continue`), so the notice is on stderr before the refused program's own
words on its failure (watch.py). For learn the call goes on first, and is judged after.

Built by setup.py at install; without a C compiler the pure-Python watch is used.
"""

from __future__ import annotations

from cffi import FFI  # type: ignore[import-untyped]

EVENT = """
#define LNK_DONE 0
#define LNK_EXEC 1
#define LNK_OTHER 2
#define LNK_ERROR -1
#define LNK_PATH 4096

struct lnk_event {
    int kind;
    int err;
    unsigned long long id;
    int pid;
    int nr;
    unsigned long long args[6];
    int wanted;
    unsigned long long dev, ino;
    char asked[4096];
    char resolved[4096];
    int interp_wanted;
    unsigned long long interp_dev, interp_ino;
    char interp_asked[4096];
    char interp_resolved[4096];
    int pending;
};
"""

CDEF = EVENT + """
struct lnk_watch;
struct lnk_watch *lnk_watch_new(int listener, int execve_nr, int execveat_nr, int record,
                                int restricted, const unsigned long long *allowed,
                                size_t nallowed);
int lnk_watch_next(struct lnk_watch *w, struct lnk_event *ev);
void lnk_watch_continue(struct lnk_watch *w, unsigned long long id);
void lnk_watch_free(struct lnk_watch *w);
"""

SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE 4096

#ifndef SECCOMP_IOCTL_NOTIF_ID_VALID
#define SECCOMP_IOCTL_NOTIF_ID_VALID SECCOMP_IOW(2, __u64)
#endif

""" + EVENT + r"""

struct lnk_watch {
    int listener, execve_nr, execveat_nr, record, restricted;
    int root, mounts, done;
    unsigned long long *allowed;
    size_t nallowed;
    pthread_mutex_t lead;
    pthread_mutex_t root_lock;
};

struct lnk_watch *lnk_watch_new(int listener, int execve_nr, int execveat_nr, int record,
                                int restricted, const unsigned long long *allowed,
                                size_t nallowed) {
    struct lnk_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->listener = listener; w->execve_nr = execve_nr; w->execveat_nr = execveat_nr;
    w->record = record; w->restricted = restricted; w->root = -1; w->mounts = -1;
    w->allowed = calloc(nallowed ? nallowed * 2 : 1, sizeof *w->allowed);
    if (!w->allowed) { free(w); return NULL; }
    memcpy(w->allowed, allowed, nallowed * 2 * sizeof *allowed);
    w->nallowed = nallowed;
    pthread_mutex_init(&w->lead, NULL);
    pthread_mutex_init(&w->root_lock, NULL);
    return w;
}

void lnk_watch_free(struct lnk_watch *w) {
    if (!w) return;
    if (w->root >= 0) close(w->root);
    if (w->mounts >= 0) close(w->mounts);
    free(w->allowed);
    pthread_mutex_destroy(&w->lead);
    pthread_mutex_destroy(&w->root_lock);
    free(w);
}

static int allowed(struct lnk_watch *w, unsigned long long dev, unsigned long long ino) {
    for (size_t i = 0; i < w->nallowed; i++)
        if (w->allowed[2 * i] == dev && w->allowed[2 * i + 1] == ino) return 1;
    return 0;
}

/* A NUL-terminated string of another process, page by page (process_vm_readv honours
   page protections); 0 when something was read. */
static int read_string(pid_t pid, unsigned long long address, char *out, size_t size) {
    size_t used = 0;
    while (used + 1 < size) {
        size_t chunk = PAGE - (address % PAGE);
        if (chunk > size - 1 - used) chunk = size - 1 - used;
        struct iovec local = { out + used, chunk };
        struct iovec remote = { (void *)(unsigned long)address, chunk };
        ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got <= 0) break;
        char *end = memchr(out + used, 0, (size_t)got);
        if (end) return 0;
        used += (size_t)got;
        address += (unsigned long long)got;
        if ((size_t)got < chunk) break;
    }
    out[used] = 0;
    return used ? 0 : -1;
}

static int open_in_root(int root, const char *path, int flags) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(flags | O_CLOEXEC);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, root, path, &how, sizeof how);
}

/* Resolve `path` in the sandbox's root; fill identity, and the path as the sandbox sees
   it when wanted. Returns 1 when the judgement wants Python to hear of it. */
static int judge(struct lnk_watch *w, const char *path, unsigned long long *dev,
                 unsigned long long *ino, char *resolved, char *head, size_t headsize,
                 ssize_t *headlen) {
    /* Non-blocking: a FIFO exec'd (the kernel refuses it) would wait for a writer and
       stall this receiver; an unreadable file is still judged through O_PATH. */
    int fd = open_in_root(w->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) { fd = open_in_root(w->root, path, O_PATH); head = NULL; }
    if (fd < 0) return 0;
    struct stat st;
    int wanted = 0;
    if (fstat(fd, &st) == 0) {
        *dev = st.st_dev; *ino = st.st_ino;
        if (head && S_ISREG(st.st_mode)) *headlen = pread(fd, head, headsize, 0);
        wanted = w->record || (w->restricted && !allowed(w, st.st_dev, st.st_ino));
        if (wanted) {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, resolved, LNK_PATH - 1);
            resolved[n > 0 ? n : 0] = 0;
        }
    }
    close(fd);
    return wanted;
}

/* The sandbox's root, and its mount namespace held for the run (watch.py's _hold_root
   says why: judged after the exec went on, a file of a sandbox that has ended is found
   only while its namespace, and so its mounts, are held). */
static void hold_root(struct lnk_watch *w, int pid) {
    pthread_mutex_lock(&w->root_lock);
    if (w->root < 0) {
        char link[64];
        snprintf(link, sizeof link, "/proc/%d/ns/mnt", pid);
        int mounts = open(link, O_RDONLY | O_CLOEXEC);
        snprintf(link, sizeof link, "/proc/%d/root", pid);
        int root = mounts < 0 ? -1 : open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 && mounts >= 0) close(mounts);
        else if (root >= 0) { w->mounts = mounts; w->root = root; }
    }
    pthread_mutex_unlock(&w->root_lock);
}

static void send_continue(int listener, unsigned long long id) {
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof resp);
    resp.id = id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);  /* ENOENT: the caller is gone */
}

static int on_exec(struct lnk_watch *w, struct seccomp_notif *n, struct lnk_event *ev) {
    char path[LNK_PATH];
    int have = 0;
    long dirfd = AT_FDCWD;
    unsigned long long pointer = n->data.args[0];
    if (n->data.nr == w->execveat_nr) {
        dirfd = (int)(unsigned int)n->data.args[0];
        pointer = n->data.args[1];
    }
    if (read_string(n->pid, pointer, ev->asked, LNK_PATH) == 0 && ev->asked[0]) {
        have = 1;
        if (ev->asked[0] == '/') {
            snprintf(path, sizeof path, "%s", ev->asked);
        } else {
            char link[64], base[LNK_PATH];
            if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", n->pid);
            else snprintf(link, sizeof link, "/proc/%d/fd/%ld", n->pid, dirfd);
            ssize_t got = readlink(link, base, sizeof base - 1);
            if (got <= 0) have = 0;
            else {
                base[got] = 0;
                snprintf(path, sizeof path, "%s/%s", strcmp(base, "/") ? base : "", ev->asked);
            }
        }
        if (have && w->root < 0) hold_root(w, n->pid);
        if (have && w->root < 0) have = 0;
        if (have && ioctl(w->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) != 0) have = 0;
    }
    ev->pending = 0;
    /* Learn records every exec and says nothing: its calls go on before the judgement.
       Under a list the judgement comes first, so a refusal is said before it goes on. */
    if (!have || w->record) send_continue(w->listener, n->id);
    if (!have) return 0;
    char head[256];
    ssize_t headlen = 0;
    ev->wanted = judge(w, path, &ev->dev, &ev->ino, ev->resolved, head, sizeof head - 1,
                       &headlen);
    ev->interp_wanted = 0;
    if (headlen > 2 && head[0] == '#' && head[1] == '!') {
        head[headlen] = 0;
        char *start = head + 2;
        while (*start == ' ' || *start == '\t') start++;
        size_t len = strcspn(start, " \t\n");
        if (len > 0) {
            start[len] = 0;
            snprintf(ev->interp_asked, LNK_PATH, "%s", start);
            ev->interp_wanted = judge(w, start, &ev->interp_dev, &ev->interp_ino,
                                      ev->interp_resolved, NULL, 0, NULL);
        }
    }
    int wanted = ev->wanted || ev->interp_wanted;
    if (!w->record) {
        if (wanted) ev->pending = 1;  /* Python says it, then lnk_watch_continue */
        else send_continue(w->listener, n->id);
    }
    return wanted;
}

void lnk_watch_continue(struct lnk_watch *w, unsigned long long id) {
    send_continue(w->listener, id);
}

int lnk_watch_next(struct lnk_watch *w, struct lnk_event *ev) {
    for (;;) {
        struct seccomp_notif n;
        pthread_mutex_lock(&w->lead);
        for (;;) {
            if (w->done) { pthread_mutex_unlock(&w->lead); ev->kind = LNK_DONE; return 0; }
            struct pollfd p = { w->listener, POLLIN, 0 };
            int ready = poll(&p, 1, -1);
            if (ready < 0) {
                if (errno == EINTR) continue;
                ev->err = errno; w->done = 1;
                pthread_mutex_unlock(&w->lead);
                ev->kind = LNK_ERROR; return -1;
            }
            if (!(p.revents & POLLIN)) { w->done = 1; continue; }  /* hang-up */
            memset(&n, 0, sizeof n);
            if (ioctl(w->listener, SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) break;
            if (errno == ENOENT) {
                if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) w->done = 1;
                continue;  /* the caller died between the poll and the receive */
            }
            if (errno == EINTR) continue;
            ev->err = errno; w->done = 1;
            pthread_mutex_unlock(&w->lead);
            ev->kind = LNK_ERROR; return -1;
        }
        pthread_mutex_unlock(&w->lead);
        ev->id = n.id; ev->pid = (int)n.pid; ev->nr = n.data.nr;
        memcpy(ev->args, n.data.args, sizeof ev->args);
        ev->pending = 0;
        if (n.data.nr == w->execve_nr || n.data.nr == w->execveat_nr) {
            if (on_exec(w, &n, ev)) { ev->kind = LNK_EXEC; return 0; }
            continue;
        }
        ev->kind = LNK_OTHER;
        return 0;
    }
}
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source("supervisor.linux._watchc", SOURCE, libraries=["pthread"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
