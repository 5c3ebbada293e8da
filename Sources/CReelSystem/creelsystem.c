// GNU extensions that Swift's Glibc module leaves out (it is built without _GNU_SOURCE).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "creelsystem.h"

int reel_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int reel_socketpair_cloexec(int fds[2]) { return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds); }

long reel_send_nosignal(int fd, const void *bytes, unsigned long count) {
    return (long)send(fd, bytes, count, MSG_NOSIGNAL);
}

int reel_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

// glibc 2.36 (Debian 12) has the wrappers; Swift's Glibc module does not export sys/pidfd.h.
int reel_pidfd_open(pid_t pid) { return pidfd_open(pid, 0); }

int reel_pidfd_send_signal(int pidfd, int signal) { return pidfd_send_signal(pidfd, signal, NULL, 0); }

int reel_pidfd_wait(int pidfd, int keep, int *exited, int *value) {
    siginfo_t info = {0};
    int status;
    do {
        status = waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | (keep ? WNOWAIT : 0));
    } while (status != 0 && errno == EINTR);
    if (status != 0) return -1;
    *exited = info.si_code == CLD_EXITED;
    *value = info.si_status;
    return 0;
}

int reel_setxattr(const char *path, const char *name, const void *value, unsigned long size) {
    return setxattr(path, name, value, size, 0);
}

long reel_getxattr(const char *path, const char *name, void *value, unsigned long size) {
    return (long)getxattr(path, name, value, size);
}

int reel_removexattr(const char *path, const char *name) { return removexattr(path, name); }

int reel_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
