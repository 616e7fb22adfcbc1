/* The inner confiner, compiled: inner/main.py's steps, in its order, from the same
 * configuration (inner/config.py's form), with the C library alone.
 *
 * Started by bwrap inside the sandbox as `confine CONFIG_FD`, from the inner package's
 * read-only mount, or, without namespaces, by the supervisor itself from the host's own
 * file (linux/direct.py; the run's mark may follow the fd, and is not read). Linked
 * statically (setup.py), so it needs neither an interpreter nor a C library inside, and
 * costs what bwrap costs: the Python inner's interpreter and imports were 2.3x bare
 * bwrap. The supervisor computes everything (linux/confine.py, linux/direct_rules.py:
 * the seccomp program as BPF bytes, the Landlock rules as paths and right bits, the
 * limits by number); this program only applies it:
 *
 * 0. without namespaces (F_DIRECT: no bwrap), the parent-death signal, so that nothing
 *    runs on once the supervisor is gone, the parent looked at (gone already: exit
 *    125), then no_new_privs and every capability dropped for good: no user namespace
 *    holds them;
 * 1. no_new_privs, then the seccomp filter, first of all, so that no step below runs
 *    unfiltered and nothing the target runs can escape it;
 * 2. the listener fd (when the filter has one) sent to the supervisor at once, before
 *    any call the filter hands to it could wait on a listener nobody holds;
 * 3. (the Python inner finishes its imports here; nothing is loaded later in C);
 * 4. Landlock, which holds the file grants again inside the mounts; any error fails
 *    closed, whatever a cached check said; without namespaces (F_REAPER), the reaper
 *    left in its domain and this process nested in a scoped one (inner/reaper.py);
 * 5. the run's limits (setrlimit), then default signal dispositions and an empty mask:
 *    bwrap was started with SIGINT, SIGTERM, SIGHUP and SIGQUIT ignored, and exec keeps
 *    an ignored signal ignored;
 * 6. every fd closed but 0-2 and the status socket (close-on-exec, to report an exec
 *    failure); the mount table handed over when asked (linux/mount_watch.py);
 * 7. the supervisor's go awaited (the network helper listening, the terminal handed over);
 * 8. execve, PATH searched as Python's os.execvpe does; a failure is reported on the
 *    status socket and exits 126, or 127 for a program not found.
 *
 * Any failure before execve exits 125 and says why on the status socket (a configuration
 * it cannot read, on stderr): the target never runs less confined than asked. A
 * harness's file operation (inner/fileop.py) is the Python inner's alone: the supervisor
 * starts that one for it, and this one refuses a configuration that asks.
 *
 * Facts (see inner/seccomp.py, inner/landlock.py, inner/protocol.py for the long form):
 * - seccomp(SET_MODE_FILTER) needs no_new_privs (EACCES); NEW_LISTENER returns the
 *   listener fd, EBUSY when a filter above has one already (one per chain);
 *   WAIT_KILLABLE_RECV (5.19) needs NEW_LISTENER.
 * - Landlock's calls are 444-446 on every architecture; create_ruleset(NULL, 0, 1) gives
 *   the ABI, ENOSYS or EOPNOTSUPP where there is none. landlock_path_beneath_attr is
 *   packed: 12 bytes. A rule allowing nothing is ENOMSG, so it is left out; a directory
 *   right on a file is EINVAL, so a file keeps the file rights only.
 * - The status socket is SOCK_SEQPACKET: each send arrives whole; MSG_NOSIGNAL, so that
 *   a supervisor gone is EPIPE here, never a SIGPIPE.
 * - close_range(2) is Linux 5.9; before it every fd is closed one by one.
 * - Capabilities (inner/capabilities.py for the long form): PR_CAPBSET_DROP and
 *   PR_SET_SECUREBITS need CAP_SETPCAP in the effective set, so both go before capset
 *   empties it; PR_CAPBSET_READ answers EINVAL past the kernel's last capability;
 *   capset with _LINUX_CAPABILITY_VERSION_3 takes two 32-bit words per set. Under
 *   no_new_privs an empty permitted set stays empty through execve, uid 0 included.
 */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_ARCH 0xC000003Eu /* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__) && !defined(__ILP32__)
#define NATIVE_ARCH 0xC00000B7u /* AUDIT_ARCH_AARCH64 */
#else
#error "no seccomp architecture for this machine: lnk-sandbox uses the Python inner"
#endif

/* inner/config.py's form. */
#define MAGIC "LNKINNER"
#define VERSION 2u
#define LARGEST (64u << 20)
#define F_WATCH_MOUNTS (1u << 0)
#define F_SECCOMP (1u << 1)
#define F_LISTENER (1u << 2)
#define F_LANDLOCK (1u << 3)
#define F_LANDLOCK_REQUIRED (1u << 4)
#define F_FILE (1u << 5)
#define F_FILE_LIMIT (1u << 6)
#define F_DIRECT (1u << 7)
#define F_LANDLOCK_NOFOLLOW (1u << 8)
#define F_LANDLOCK_OPTIONAL (1u << 9)
#define F_REAPER (1u << 10)
#define F_ALL 0x7FFu
#define ABI_ROW 28u
#define PID_LIMIT (1u << 22)
#define BPF_INSN 8u
#define BPF_MAXINSNS 4096u
#define MAX_ABIS 64u

/* The kernel's numbers, the same on both architectures. */
#define SECCOMP_SET_MODE_FILTER_ 1
#define SECCOMP_FILTER_FLAG_NEW_LISTENER_ (1ul << 3)
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV_ (1ul << 5)
#define SYS_landlock_create_ruleset_ 444
#define SYS_landlock_add_rule_ 445
#define SYS_landlock_restrict_self_ 446
#define SYS_close_range_ 436
#define LANDLOCK_CREATE_RULESET_VERSION_ 1u
#define LANDLOCK_RULE_PATH_BENEATH_ 1
#define LL_READ_FILE (1ull << 2)
#define LL_READ_DIR (1ull << 3)
#define PR_SET_PDEATHSIG_ 1
#define PR_CAPBSET_READ_ 23
#define PR_CAPBSET_DROP_ 24
#define PR_GET_SECUREBITS_ 27
#define PR_SET_SECUREBITS_ 28
#define PR_SET_NO_NEW_PRIVS_ 38
#define PR_CAP_AMBIENT_ 47
#define PR_CAP_AMBIENT_CLEAR_ALL_ 4
#define CAP_SETPCAP_ 8
/* SECBIT_NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and each one's lock, and
 * KEEP_CAPS_LOCKED: inner/capabilities.py's LOCKED_BITS. */
#define LOCKED_BITS 0xEFul
#define MESSAGE_MAX 4096

struct bpf_insn_ { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct cap_header_ { uint32_t version; int pid; };
struct cap_data_ { uint32_t effective, permitted, inheritable; };
#define CAP_VERSION_3_ 0x20080522u
struct bpf_prog_ { unsigned short len; struct bpf_insn_ *filter; };
struct path_beneath_ { uint64_t allowed; int32_t parent_fd; } __attribute__((packed));

struct abi_row { uint64_t handled, net, scoped; uint32_t size; };
struct rule { char *path; uint64_t rights; int listed, optional; };
struct closed { char *folder; size_t n; char **hidden; };
struct limit { char *name; uint32_t resource; uint64_t value; };

struct config {
    uint32_t status_fd, flags, parent, reaper;
    size_t argc;
    char **argv;
    uint32_t arch;
    uint8_t *program, *fallback;
    size_t program_len, fallback_len;
    size_t nabis, nrules, nclosed, nlimits;
    struct abi_row *abis;
    uint64_t file_rights;
    struct rule *rules;
    struct closed *closed;
    struct limit *limits;
};

#ifndef LNK_SOURCE_SHA256
#define LNK_SOURCE_SHA256 "unknown"
#endif
/* The digest of the source it was built from (setup.py): a stale build is found by it. */
const char lnk_source[] = "lnk-confine-source-sha256:" LNK_SOURCE_SHA256;

extern char **environ;
static int status_fd = -1;

/* -- failing ------------------------------------------------------------------------ */

static void send_message(char kind, const char *body, size_t len) {
    char buffer[MESSAGE_MAX];
    if (status_fd < 0) return;
    buffer[0] = kind;
    if (len > sizeof buffer - 1) len = sizeof buffer - 1;
    memcpy(buffer + 1, body, len);
    /* The supervisor gone: the exit status still tells bwrap's pid 1. */
    (void)send(status_fd, buffer, len + 1, MSG_NOSIGNAL);
}

/* A step could not be applied: say why on the status socket, and never run the target. */
static void fail(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *format, ...) {
    char text[MESSAGE_MAX];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof text) n = (int)sizeof text - 1;
    send_message('C', text, (size_t)n);
    _exit(125);
}

/* The configuration cannot be read: there is no status socket yet to say it on. */
static void malformed(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void malformed(const char *format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    dprintf(2, "lnk-sandbox: the inner confiner's configuration is unreadable: %s\n", text);
    _exit(125);
}

static void *alloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size);
    if (p == NULL) fail("out of memory");
    return p;
}

/* -- reading the configuration ---------------------------------------------------- */

struct reader { const uint8_t *p; size_t left; };

static const uint8_t *take(struct reader *r, size_t size) {
    if (size > r->left) malformed("it ends before its last field");
    const uint8_t *at = r->p;
    r->p += size;
    r->left -= size;
    return at;
}

static uint32_t u32(struct reader *r) {
    const uint8_t *b = take(r, 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t u64(struct reader *r) {
    uint64_t low = u32(r);
    return low | (uint64_t)u32(r) << 32;
}

/* A count of items of at least `smallest` bytes each: more than what is left could hold
 * is malformed before anything is made for them. */
static size_t count(struct reader *r, size_t smallest) {
    size_t n = u32(r);
    if (n > r->left / smallest) malformed("a count larger than what follows");
    return n;
}

static const uint8_t *blob(struct reader *r, size_t *len) {
    *len = count(r, 1);
    return take(r, *len);
}

static char *text(struct reader *r, int empty) {
    size_t len;
    const uint8_t *data = blob(r, &len);
    if ((len == 0 && !empty) || memchr(data, 0, len) != NULL)
        malformed("a name that is empty or holds a NUL");
    char *copy = alloc(len + 1, 1);
    memcpy(copy, data, len);
    return copy;
}

static uint8_t *program(struct reader *r, size_t *len, int empty) {
    const uint8_t *data = blob(r, len);
    if ((*len == 0 && !empty) || *len % BPF_INSN || *len > BPF_INSN * BPF_MAXINSNS)
        malformed("a filter that is not 1 to 4096 instructions");
    uint8_t *copy = alloc(*len, 1); /* aligned for struct sock_filter */
    memcpy(copy, data, *len);
    return copy;
}

static void parse(const uint8_t *data, size_t size, struct config *c) {
    struct reader r = {data, size};
    if (memcmp(take(&r, 8), MAGIC, 8) != 0)
        malformed("it does not start as the inner's configuration");
    uint32_t version = u32(&r);
    if (version != VERSION) malformed("it is of version %u, this inner reads %u", version, VERSION);
    c->status_fd = u32(&r);
    c->flags = u32(&r);
    uint32_t f = c->flags;
    if (c->status_fd < 3 || c->status_fd > (1u << 30)) malformed("the status socket's fd");
    if ((f & ~F_ALL) || ((f & F_LISTENER) && !(f & F_SECCOMP))
        || ((f & (F_LANDLOCK_REQUIRED | F_LANDLOCK_NOFOLLOW | F_LANDLOCK_OPTIONAL))
            && !(f & F_LANDLOCK))
        || ((f & F_FILE_LIMIT) && !(f & F_FILE)) || ((f & F_REAPER) && !(f & F_DIRECT)))
        malformed("its flags");
    if (f & F_DIRECT) {
        c->parent = u32(&r);
        if (c->parent == 0 || c->parent > PID_LIMIT) malformed("the supervisor's pid");
    }
    if (f & F_REAPER) {
        c->reaper = u32(&r);
        if (c->reaper < 3 || c->reaper > (1u << 30)) malformed("the reaper's pipe");
    }
    c->argc = count(&r, 4);
    if (c->argc == 0) malformed("the command is empty");
    c->argv = alloc(c->argc + 1, sizeof *c->argv);
    for (size_t i = 0; i < c->argc; i++) c->argv[i] = text(&r, i > 0);
    if (f & F_SECCOMP) {
        c->arch = u32(&r);
        c->program = program(&r, &c->program_len, 0);
        c->fallback = program(&r, &c->fallback_len, 1);
        if (c->fallback_len && !(f & F_LISTENER)) malformed("a fallback without a listener");
    }
    if (f & F_LANDLOCK) {
        c->nabis = count(&r, ABI_ROW);
        if (c->nabis == 0 || c->nabis > MAX_ABIS) malformed("the Landlock ABIs described");
        c->abis = alloc(c->nabis, sizeof *c->abis);
        for (size_t i = 0; i < c->nabis; i++) {
            struct abi_row *row = &c->abis[i];
            row->handled = u64(&r);
            row->net = u64(&r);
            row->scoped = u64(&r);
            row->size = u32(&r);
            /* The network rights are the attr's second field, the scopes its third: a
             * size that leaves one out would leave it silently not handled. */
            if ((row->size != 8 && row->size != 16 && row->size != 24)
                || (row->net && row->size < 16) || (row->scoped && row->size < 24))
                malformed("a landlock_ruleset_attr's size");
        }
        c->file_rights = u64(&r);
        c->nrules = count(&r, 12);
        c->rules = alloc(c->nrules, sizeof *c->rules);
        for (size_t i = 0; i < c->nrules; i++) {
            c->rules[i].path = text(&r, 0);
            c->rules[i].rights = u64(&r);
            if (c->rules[i].rights & ~c->abis[c->nabis - 1].handled)
                malformed("a rule holds rights no ABI described has");
        }
        c->nclosed = count(&r, 8);
        c->closed = alloc(c->nclosed, sizeof *c->closed);
        for (size_t i = 0; i < c->nclosed; i++) {
            c->closed[i].folder = text(&r, 0);
            c->closed[i].n = count(&r, 4);
            c->closed[i].hidden = alloc(c->closed[i].n, sizeof(char *));
            for (size_t j = 0; j < c->closed[i].n; j++) c->closed[i].hidden[j] = text(&r, 0);
        }
    }
    c->nlimits = count(&r, 16);
    c->limits = alloc(c->nlimits, sizeof *c->limits);
    for (size_t i = 0; i < c->nlimits; i++) {
        c->limits[i].name = text(&r, 0);
        c->limits[i].resource = u32(&r);
        c->limits[i].value = u64(&r);
        if (c->limits[i].resource >= 64) malformed("a limit's resource number");
    }
    if (f & F_FILE) {
        char *op = text(&r, 0);
        (void)text(&r, 0);
        uint64_t limit = u64(&r);
        if ((strcmp(op, "read") != 0 && strcmp(op, "write") != 0)
            || (limit != 0 && !(f & F_FILE_LIMIT)))
            malformed("its file operation");
    }
    if (r.left != 0) malformed("bytes after its end");
}

static uint8_t *read_all(int fd, size_t *size) {
    size_t cap = 1 << 16, len = 0;
    uint8_t *data = malloc(cap);
    if (data == NULL) malformed("out of memory");
    for (;;) {
        if (len == cap) {
            if (cap >= LARGEST + 1) malformed("larger than any the supervisor writes");
            cap *= 2;
            uint8_t *grown = realloc(data, cap);
            if (grown == NULL) malformed("out of memory");
            data = grown;
        }
        ssize_t n = read(fd, data + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) malformed("%s", strerror(errno));
        if (n == 0) break;
        len += (size_t)n;
        if (len > LARGEST) malformed("larger than any the supervisor writes");
    }
    close(fd);
    *size = len;
    return data;
}

/* -- the status socket ------------------------------------------------------------ */

static void send_fd(char kind, int fd) {
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec io = {.iov_base = &kind, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
    if (sendmsg(status_fd, &msg, MSG_NOSIGNAL) != 1)
        _exit(125); /* the supervisor is gone: nothing may run unsupervised */
}

static void notice(const char *name) { send_message('N', name, strlen(name)); }

/* -- step 0: without namespaces, the parent and the capabilities -------------------- */

/* Each failure says what inner/capabilities.py's OSError says, so that both inners send
 * the same status bytes. */
static void caps_failed(int e, const char *what) __attribute__((noreturn));
static void caps_failed(int e, const char *what) {
    fail("the capabilities could not be dropped: [Errno %d] %s: %s", e, what, strerror(e));
}

static long caps_prctl(int option, unsigned long arg2) {
    long result = prctl(option, arg2, 0ul, 0ul, 0ul);
    if (result == -1) {
        int e = errno;
        char what[64];
        snprintf(what, sizeof what, "prctl(%d, %lu)", option, arg2);
        caps_failed(e, what);
    }
    return result;
}

/* (effective, permitted, inheritable) of this thread, as 64-bit masks. */
static void caps_get(uint64_t sets[3]) {
    struct cap_header_ header = {CAP_VERSION_3_, 0};
    struct cap_data_ data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) caps_failed(errno, "capget");
    sets[0] = data[0].effective | (uint64_t)data[1].effective << 32;
    sets[1] = data[0].permitted | (uint64_t)data[1].permitted << 32;
    sets[2] = data[0].inheritable | (uint64_t)data[1].inheritable << 32;
}

static void drop_capabilities(void) {
    uint64_t held[3];
    caps_get(held);
    if (held[0] & (1ull << CAP_SETPCAP_)) {
        /* Both need CAP_SETPCAP, so both go before capset empties the effective set. */
        long bits = caps_prctl(PR_GET_SECUREBITS_, 0ul);
        caps_prctl(PR_SET_SECUREBITS_, (unsigned long)bits | LOCKED_BITS);
        for (unsigned long cap = 0; cap < 64; cap++) {
            long in = prctl(PR_CAPBSET_READ_, cap, 0ul, 0ul, 0ul);
            if (in == -1 && errno == EINVAL) break; /* past the kernel's last capability */
            if (in == -1) {
                int e = errno;
                char what[64];
                snprintf(what, sizeof what, "prctl(%d, %lu)", PR_CAPBSET_READ_, cap);
                caps_failed(e, what);
            }
            if (in) caps_prctl(PR_CAPBSET_DROP_, cap);
        }
    }
    if (prctl(PR_CAP_AMBIENT_, (unsigned long)PR_CAP_AMBIENT_CLEAR_ALL_, 0ul, 0ul, 0ul) == -1
        && errno != EINVAL) { /* a kernel before 4.3 has no ambient set */
        int e = errno;
        char what[64];
        snprintf(what, sizeof what, "prctl(%d, %d)", PR_CAP_AMBIENT_, PR_CAP_AMBIENT_CLEAR_ALL_);
        caps_failed(e, what);
    }
    struct cap_header_ header = {CAP_VERSION_3_, 0};
    struct cap_data_ empty[2];
    memset(empty, 0, sizeof empty);
    if (syscall(SYS_capset, &header, empty) != 0) caps_failed(errno, "capset");
    caps_get(held);
    if (held[0] | held[1] | held[2])
        fail("the capabilities could not be dropped: [Errno %d] capabilities still held "
             "after capset: effective 0x%llx, permitted 0x%llx, inheritable 0x%llx", EPERM,
             (unsigned long long)held[0], (unsigned long long)held[1],
             (unsigned long long)held[2]);
}

/* Step 0, without namespaces: this process is the supervisor's own child, not bwrap's,
 * so it asks for SIGKILL when the supervisor's thread ends (kept across execve), and
 * looks that the supervisor did not end first; then no_new_privs, and every capability
 * dropped (root in a container keeps its runtime's otherwise). */
static void direct_step(const struct config *c) {
    if (prctl(PR_SET_PDEATHSIG_, (unsigned long)SIGKILL, 0ul, 0ul, 0ul) != 0) {
        int e = errno;
        fail("the capabilities could not be dropped: [Errno %d] prctl(%d): %s", e,
             PR_SET_PDEATHSIG_, strerror(e));
    }
    if ((uint32_t)getppid() != c->parent)
        _exit(125); /* the supervisor is gone: nothing may run unsupervised */
    if (prctl(PR_SET_NO_NEW_PRIVS_, 1ul, 0ul, 0ul, 0ul) != 0) {
        int e = errno;
        fail("the capabilities could not be dropped: [Errno %d] prctl(%d): %s", e,
             PR_SET_NO_NEW_PRIVS_, strerror(e));
    }
    drop_capabilities();
}

/* -- steps 1 and 2: no_new_privs, the filter, its listener ------------------------- */

static long install(const uint8_t *code, size_t len, unsigned long flags) {
    struct bpf_prog_ prog = {(unsigned short)(len / BPF_INSN), (struct bpf_insn_ *)code};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER_, flags, &prog);
}

static void seccomp_step(const struct config *c) {
    if (prctl(PR_SET_NO_NEW_PRIVS_, 1ul, 0ul, 0ul, 0ul) != 0) {
        int e = errno;
        fail("the seccomp filter could not be installed: [Errno %d] prctl(38): %s", e,
             strerror(e));
    }
    if (c->arch != NATIVE_ARCH)
        fail("the seccomp filter could not be installed: the filter checks the "
             "architecture %#x, and this inner runs as %#x", c->arch, NATIVE_ARCH);
    int listener = (c->flags & F_LISTENER) != 0;
    unsigned long flags = listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER_
                                     | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV_ : 0;
    long fd = install(c->program, c->program_len, flags);
    if (fd < 0 && errno == EBUSY && listener && c->fallback_len) {
        /* A filter above has a listener (one per chain): without the watch, memory files
         * are refused and execs go unwatched; Landlock still holds the program list. */
        listener = 0;
        fd = install(c->fallback, c->fallback_len, 0);
        if (fd >= 0) notice("no-listener");
    }
    if (fd < 0) {
        int e = errno;
        fail("the seccomp filter could not be installed: [Errno %d] seccomp: %s", e,
             strerror(e));
    }
    if (listener) {
        send_fd('L', (int)fd);
        close((int)fd);
    }
}

/* -- step 4: Landlock ------------------------------------------------------------- */

struct rules { struct rule *v; size_t n, cap; };

static void push(struct rules *out, char *path, uint64_t rights, int listed) {
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        struct rule *grown = realloc(out->v, out->cap * sizeof *grown);
        if (grown == NULL) fail("out of memory");
        out->v = grown;
    }
    out->v[out->n++] = (struct rule){path, rights, listed, 0};
}

static char *join(const char *folder, const char *name) {
    size_t a = strlen(folder), b = strlen(name);
    int slash = a == 0 || folder[a - 1] != '/';
    char *path = alloc(a + b + 2, 1);
    memcpy(path, folder, a);
    if (slash) path[a] = '/';
    memcpy(path + a + slash, name, b);
    return path;
}

/* DirEntry.is_dir / is_symlink without following: the type readdir gave, else lstat's;
 * -1 when the entry cannot be judged (it is skipped, as an OSError is in main.py). */
static int entry_type(const char *path, unsigned char d_type) {
    if (d_type != DT_UNKNOWN) return d_type;
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? DT_REG : -1;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
}

static int is_mount(const char *path, const char *parent) {
    struct stat a, b;
    return lstat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static int starts_below(const char *hidden, const char *path) {
    size_t n = strlen(path);
    return strncmp(hidden, path, n) == 0 && hidden[n] == '/';
}

/* inner/landlock.py's _closed: the folder READ_DIR alone, each entry there now its
 * rights but the hidden ones, down to each hidden path. Listed inside, after the
 * mounts; what the host makes after this listing is in no rule. */
static void closed_walk(const char *folder, uint64_t rights, char **hidden, size_t nhidden,
                        struct rules *out, int listed) {
    push(out, strcpy(alloc(strlen(folder) + 1, 1), folder), LL_READ_DIR, listed);
    DIR *dir = opendir(folder);
    if (dir == NULL) return;
    size_t n = 0, cap = 0;
    char **names = NULL;
    unsigned char *types = NULL;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) { /* listed whole first, as os.scandir's list */
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **more = realloc(names, cap * sizeof *more);
            unsigned char *kinds = more ? realloc(types, cap) : NULL;
            if (more == NULL || kinds == NULL) fail("out of memory");
            names = more;
            types = kinds;
        }
        names[n] = join(folder, entry->d_name);
        types[n++] = entry->d_type;
    }
    closedir(dir);
    for (size_t i = 0; i < n; i++) {
        char *path = names[i];
        int hidden_here = 0;
        for (size_t h = 0; h < nhidden; h++) hidden_here |= strcmp(hidden[h], path) == 0;
        int type = entry_type(path, types[i]);
        if (type < 0) continue;
        if (hidden_here) {
            /* The hide itself (an empty file) reads as empty; what the host put there
             * since is no mount, and gets nothing. */
            if (type != DT_DIR && is_mount(path, folder)) push(out, path, rights, 1);
            continue;
        }
        if (type == DT_LNK) continue; /* its target has the rights of where it is */
        size_t inside = 0;
        char **below = alloc(nhidden, sizeof *below);
        for (size_t h = 0; h < nhidden; h++)
            if (starts_below(hidden[h], path)) below[inside++] = hidden[h];
        if (inside) {
            if (type == DT_DIR) closed_walk(path, rights, below, inside, out, 1);
        } else {
            push(out, path, rights, 1); /* a file's share of them (open_rule) */
        }
        free(below);
    }
    free(names);
    free(types);
}

static int by_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rules with each closed folder listed (close_hidden); a path listed there is
 * optional and never followed, wherever it is in the rules (main.py's `listed`). */
static struct rules expand(const struct config *c) {
    struct rules out = {NULL, 0, 0};
    for (size_t i = 0; i < c->nrules; i++) {
        const struct closed *closed = NULL;
        for (size_t k = 0; k < c->nclosed && closed == NULL; k++)
            if (strcmp(c->closed[k].folder, c->rules[i].path) == 0) closed = &c->closed[k];
        if (closed == NULL || !(c->rules[i].rights & LL_READ_FILE)) {
            push(&out, c->rules[i].path, c->rules[i].rights, 0);
            continue;
        }
        closed_walk(c->rules[i].path, c->rules[i].rights, closed->hidden, closed->n, &out, 0);
    }
    if (c->flags & F_LANDLOCK_OPTIONAL) { /* every path: the supervisor listed them */
        for (size_t i = 0; i < out.n; i++) out.v[i].optional = 1;
        return out;
    }
    size_t nlisted = 0;
    char **listed = alloc(out.n, sizeof *listed);
    for (size_t i = 0; i < out.n; i++)
        if (out.v[i].listed) listed[nlisted++] = out.v[i].path;
    qsort(listed, nlisted, sizeof *listed, by_path);
    for (size_t i = 0; i < out.n; i++)
        out.v[i].optional = bsearch(&out.v[i].path, listed, nlisted, sizeof *listed,
                                    by_path) != NULL;
    free(listed);
    return out;
}

static void landlock_failed(int e, const char *step, const char *path) __attribute__((noreturn));
static void landlock_failed(int e, const char *step, const char *path) {
    if (path == NULL)
        fail("Landlock could not be applied: [Errno %d] landlock %s: %s", e, step,
             strerror(e));
    fail("Landlock could not be applied: [Errno %d] landlock %s: %s: '%s'", e, step,
         strerror(e), path);
}

/* inner/landlock.py's _open_no_links: an O_PATH fd of `path`, opened one component at a
 * time from `/`, none of them followed: a link on the way is ELOOP, a link at the end
 * is opened itself (the caller skips it). /proc's own links are the kernel's, never
 * planted: a path in /proc is opened as it is. -1 with errno on failure. */
static int open_no_links(const char *path) {
    if (strcmp(path, "/proc") == 0 || strncmp(path, "/proc/", 6) == 0)
        return open(path, O_PATH | O_CLOEXEC);
    int fd = open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (fd < 0) return -1;
    const char *at = path;
    int first = 1;
    for (;;) {
        while (*at == '/') at++;
        if (*at == '\0') return fd;
        const char *end = strchr(at, '/');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        int e = 0;
        struct stat st;
        if ((len == 1 && at[0] == '.') || (len == 2 && at[0] == '.' && at[1] == '.'))
            e = EINVAL; /* a rule path is absolute and normal */
        else if (!first && fstat(fd, &st) != 0)
            e = errno;
        else if (!first && S_ISLNK(st.st_mode))
            e = ELOOP; /* a link on the way */
        if (e) {
            close(fd);
            errno = e;
            return -1;
        }
        char *part = alloc(len + 1, 1);
        memcpy(part, at, len);
        int next = openat(fd, part, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        e = errno;
        free(part);
        close(fd);
        if (next < 0) {
            errno = e;
            return -1;
        }
        fd = next;
        first = 0;
        at += len;
    }
}

static void landlock_step(const struct config *c) {
    long abi = syscall(SYS_landlock_create_ruleset_, NULL, 0ul,
                       (unsigned long)LANDLOCK_CREATE_RULESET_VERSION_);
    if (abi < 0) {
        int e = errno;
        if (e != ENOSYS && e != EOPNOTSUPP)
            fail("Landlock could not be probed: [Errno %d] landlock "
                 "create_ruleset(VERSION): %s", e, strerror(e));
        abi = 0;
    }
    if (abi == 0) {
        if (c->flags & F_LANDLOCK_REQUIRED)
            fail("this kernel has no Landlock (its calls answer ENOSYS), which the spec "
                 "needs: its program list is enforced by Landlock alone");
        notice("no-landlock");
        return;
    }
    struct rules rules = expand(c);
    const struct abi_row *row = &c->abis[((size_t)abi < c->nabis ? (size_t)abi : c->nabis) - 1];
    /* fs, net (handled without namespaces alone: landlock.abi_table's `net`), scoped */
    uint64_t attr[3] = {row->handled, row->net, row->scoped};
    long ruleset = syscall(SYS_landlock_create_ruleset_, attr, (size_t)row->size, 0ul);
    if (ruleset < 0) {
        char step[64];
        snprintf(step, sizeof step, "create_ruleset(ABI %ld)", abi);
        landlock_failed(errno, step, NULL);
    }
    /* One descriptor at a time: a closed folder may hold more entries than the open-file
     * limit. Nothing applies before every rule is added. */
    for (size_t i = 0; i < rules.n; i++) {
        const struct rule *rule = &rules.v[i];
        int nofollow = (c->flags & F_LANDLOCK_NOFOLLOW) != 0;
        int fd = nofollow ? open_no_links(rule->path)
                 : open(rule->path, O_PATH | O_CLOEXEC | (rule->optional ? O_NOFOLLOW : 0));
        if (fd < 0) {
            int e = errno;
            /* Gone, or a link now on its way: in no rule (fail closed). */
            if ((e == ENOENT || e == ENOTDIR || e == ELOOP) && rule->optional) continue;
            landlock_failed(e, e == ENOENT || e == ENOTDIR ? "rule path"
                               : nofollow ? "open(O_PATH), no link followed" : "open(O_PATH)",
                            rule->path);
        }
        struct stat st;
        if (fstat(fd, &st) != 0) landlock_failed(errno, "fstat", rule->path);
        if (S_ISLNK(st.st_mode)) { /* a listed entry made a link since: in no rule */
            close(fd);
            continue;
        }
        uint64_t mask = rule->rights & row->handled
                        & (S_ISDIR(st.st_mode) ? ~(uint64_t)0 : c->file_rights);
        if (mask == 0) { /* nothing this kernel or inode can grant: ENOMSG if sent */
            close(fd);
            continue;
        }
        struct path_beneath_ beneath = {mask, fd};
        if (syscall(SYS_landlock_add_rule_, (int)ruleset, LANDLOCK_RULE_PATH_BENEATH_,
                    &beneath, 0ul) != 0) {
            char step[64];
            snprintf(step, sizeof step, "add_rule(path_beneath, %#llx)",
                     (unsigned long long)mask);
            landlock_failed(errno, step, rule->path);
        }
        close(fd);
    }
    if (syscall(SYS_landlock_restrict_self_, (int)ruleset, 0ul) != 0)
        landlock_failed(errno, "restrict_self", NULL);
    close((int)ruleset);
}

/* Step 4b, without namespaces (inner/reaper.py says why): a reaper left in this
 * domain, a grandchild the supervisor (the subreaper) inherits, that ends every process
 * it may signal, the sandbox's alone by Landlock's scope, once the supervisor's pipe
 * reads EOF; then this process nested in a domain that scopes signals alone, so that
 * nothing the command starts can signal or ptrace the reaper. Below ABI 6 none. */
static void reaper_step(const struct config *c, char **argv) {
    int fd = (int)c->reaper;
    long abi = syscall(SYS_landlock_create_ruleset_, NULL, 0ul,
                       (unsigned long)LANDLOCK_CREATE_RULESET_VERSION_);
    /* Only where this domain scopes signals (the row applied says so): else kill(-1)
     * would reach every process of the uid. */
    if (abi < 6 || !(c->flags & F_LANDLOCK) || c->nabis == 0
        || !(c->abis[((size_t)abi < c->nabis ? (size_t)abi : c->nabis) - 1].scoped & 2u)) {
        close(fd);
        return;
    }
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        fail("the reaper could not be left: [Errno %d] fork: %s", e, strerror(e));
    }
    if (child == 0) {
        if (fork() == 0) {
            static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP,
                                          SIGTTIN, SIGTTOU};
            for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
                signal(ignored[i], SIG_IGN);
            setpgid(0, 0); /* out of the group the keeper kills, lest it end this first */
            /* The run's mark wiped from the command line: the keeper kills it too. */
            for (size_t i = 1; argv[i]; i++) memset(argv[i], 0, strlen(argv[i]));
            if (dup2(fd, 0) == 0) syscall(SYS_close_range_, 1u, ~0u, 0u);
            char byte[64];
            for (;;) {
                ssize_t n = read(0, byte, sizeof byte);
                if (n > 0 || (n < 0 && errno == EINTR)) continue;
                break;
            }
            kill(-1, SIGKILL);
        }
        _exit(0);
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
    close(fd);
    /* handled fs, handled net, scoped: abstract unix sockets (1) and signals (2) */
    uint64_t attr[3] = {0, 0, 3};
    long ruleset = syscall(SYS_landlock_create_ruleset_, attr, sizeof attr, 0ul);
    if (ruleset < 0) landlock_failed(errno, "create_ruleset(scopes)", NULL);
    if (syscall(SYS_landlock_restrict_self_, (int)ruleset, 0ul) != 0)
        landlock_failed(errno, "restrict_self", NULL);
    close((int)ruleset);
}

/* -- step 5: limits and signals --------------------------------------------------- */

static void limits_step(const struct config *c) {
    for (size_t i = 0; i < c->nlimits; i++) {
        const struct limit *l = &c->limits[i];
        struct rlimit now;
        if (getrlimit((int)l->resource, &now) == 0) {
            /* Never above the hard limit given: raising it needs CAP_SYS_RESOURCE. */
            rlim_t top = now.rlim_max == RLIM_INFINITY || l->value < now.rlim_max
                         ? (rlim_t)l->value : now.rlim_max;
            struct rlimit set = {top, top};
            if (setrlimit((int)l->resource, &set) == 0) continue;
        }
        int e = errno;
        fail("the limit %s = %llu could not be set: [Errno %d] %s", l->name,
             (unsigned long long)l->value, e, strerror(e));
    }
}

static void signals_step(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        struct sigaction now;
        /* The C library's own (glibc's SIGCANCEL, SIGSETXID) answer EINVAL: left. */
        if (sigaction(sig, NULL, &now) == 0 && now.sa_handler != SIG_DFL)
            (void)sigaction(sig, &dfl, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* -- step 6: descriptors ---------------------------------------------------------- */

static void close_from(unsigned lo, unsigned hi) {
    if (lo > hi) return;
    if (syscall(SYS_close_range_, lo, hi, 0u) == 0) return;
    for (unsigned fd = lo; fd <= hi && fd < (1u << 20); fd++) close((int)fd);
}

static void fds_step(void) {
    close_from(3, (unsigned)status_fd - 1);
    close_from((unsigned)status_fd + 1, ~0u);
    int flags = fcntl(status_fd, F_GETFD);
    if (flags < 0 || fcntl(status_fd, F_SETFD, flags | FD_CLOEXEC) != 0)
        fail("the status socket could not be made close-on-exec: %s", strerror(errno));
}

static void mounts_step(void) {
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        fail("cannot open the sandbox's mount table: [Errno %d] %s: '/proc/self/mountinfo'",
             e, strerror(e));
    }
    send_fd('M', fd);
    close(fd);
}

/* -- step 7: the go --------------------------------------------------------------- */

static int wait_for_go(void) {
    char answer[16];
    if (send(status_fd, "W", 1, MSG_NOSIGNAL) != 1) return 0;
    ssize_t n;
    do n = recv(status_fd, answer, sizeof answer, 0); while (n < 0 && errno == EINTR);
    return n == 1 && answer[0] == 'G';
}

/* -- step 8: exec ----------------------------------------------------------------- */

static const char *exec_path(void) {
    const char *path = getenv("PATH");
    return path != NULL ? path : "/bin:/usr/bin"; /* os.defpath */
}

/* The error os.execvpe raises: through PATH, the first error that is not ENOENT or
 * ENOTDIR, else the last one (glibc's execvpe would run a file without #! as a shell
 * script, which Python's does not). */
static int exec_search(char **argv) {
    const char *program = argv[0];
    if (strchr(program, '/') != NULL) {
        execve(program, argv, environ);
        return errno;
    }
    int saved = 0, last = ENOENT;
    const char *folder = exec_path();
    for (;;) {
        const char *end = strchr(folder, ':');
        size_t len = end ? (size_t)(end - folder) : strlen(folder);
        char *dir = alloc(len + 1, 1);
        memcpy(dir, folder, len);
        char *full = len ? join(dir, program) : strcpy(alloc(strlen(program) + 1, 1), program);
        execve(full, argv, environ);
        last = errno;
        if (last != ENOENT && last != ENOTDIR && saved == 0) saved = last;
        free(full);
        free(dir);
        if (end == NULL) break;
        folder = end + 1;
    }
    return saved ? saved : last;
}

/* The `#!` interpreter of the script execve found for `program`, when that is what is
 * missing: the kernel answers ENOENT for it then, as for no file at all. */
static char *missing_interpreter(const char *program) {
    const char *path = getenv("PATH");
    const char *folder = strchr(program, '/') ? NULL
                         : (path != NULL && *path != '\0' ? path : "/bin:/usr/bin");
    for (;;) {
        const char *end = folder ? strchr(folder, ':') : NULL;
        char *candidate;
        if (folder == NULL) {
            candidate = strcpy(alloc(strlen(program) + 1, 1), program);
        } else {
            size_t len = end ? (size_t)(end - folder) : strlen(folder);
            char *dir = alloc(len + 2, 1);
            memcpy(dir, len ? folder : ".", len ? len : 1);
            candidate = join(dir, program);
            free(dir);
        }
        int fd = open(candidate, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        free(candidate);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
            char head[257];
            size_t got = 0;
            ssize_t n;
            while (got < 256 && ((n = read(fd, head + got, 256 - got)) > 0
                                 || (n < 0 && errno == EINTR)))
                if (n > 0) got += (size_t)n;
            close(fd);
            head[got] = '\0';
            if (got < 2 || head[0] != '#' || head[1] != '!') return NULL;
            char *line = head + 2, *newline = memchr(line, '\n', got - 2);
            size_t linelen = newline ? (size_t)(newline - line) : got - 2;
            const char *space = " \t\n\r\v\f";
            size_t start = 0;
            while (start < linelen && line[start] && strchr(space, line[start])) start++;
            size_t stop = start;
            while (stop < linelen && line[stop] && !strchr(space, line[stop])) stop++;
            if (stop == start) return NULL;
            line[stop] = '\0';
            struct stat there;
            return stat(line + start, &there) == 0 ? NULL
                   : strcpy(alloc(stop - start + 1, 1), line + start);
        }
        if (fd >= 0) close(fd);
        if (folder == NULL || end == NULL) return NULL;
        folder = end + 1;
    }
}

static void exec_step(char **argv) __attribute__((noreturn));
static void exec_step(char **argv) {
    int e = exec_search(argv);
    char *interpreter = e == ENOENT ? missing_interpreter(argv[0]) : NULL;
    char number[16];
    int digits = snprintf(number, sizeof number, "%d ", e);
    size_t plen = strlen(argv[0]), ilen = interpreter ? strlen(interpreter) + 1 : 0;
    char *body = alloc((size_t)digits + plen + ilen + 1, 1);
    memcpy(body, number, (size_t)digits);
    memcpy(body + digits, argv[0], plen);
    if (interpreter) memcpy(body + digits + plen + 1, interpreter, ilen - 1); /* \0 between */
    send_message('E', body, (size_t)digits + plen + ilen);
    if (interpreter) _exit(126); /* found, but it cannot run: as a shell says of it */
    _exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

int main(int argc, char **argv) {
    /* What follows the fd (the run's mark, without namespaces) is not read. */
    if (argc < 2 || argv[1][0] == '\0' || strspn(argv[1], "0123456789") != strlen(argv[1])
        || strlen(argv[1]) > 9)
        malformed("run as `confine CONFIG_FD`");
    int config_fd = atoi(argv[1]);
    size_t size;
    uint8_t *data = read_all(config_fd, &size);
    struct config c;
    memset(&c, 0, sizeof c);
    parse(data, size, &c);
    int type;
    socklen_t len = sizeof type;
    if (getsockopt((int)c.status_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
        int e = errno;
        dprintf(2, "lnk-sandbox: the inner confiner's status socket: [Errno %d] %s\n", e,
                strerror(e));
        _exit(125);
    }
    status_fd = (int)c.status_fd;
    if (c.flags & F_FILE)
        fail("a file operation is the Python inner's: this compiled one runs commands only");
    if (c.flags & F_DIRECT) direct_step(&c);
    if (c.flags & F_SECCOMP) seccomp_step(&c);
    if (c.flags & F_LANDLOCK) landlock_step(&c);
    if (c.flags & F_REAPER) reaper_step(&c, argv);
    limits_step(&c);
    signals_step();
    fds_step();
    if (c.flags & F_WATCH_MOUNTS) mounts_step();
    if (!wait_for_go()) _exit(125); /* the supervisor is gone: nothing may run unsupervised */
    exec_step(c.argv);
}
