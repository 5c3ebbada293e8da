#ifndef REEL_CREELSYSTEM_H
#define REEL_CREELSYSTEM_H

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>

/// pipe2(fds, O_CLOEXEC): both ends close-on-exec from the start, so a child another thread spawns
/// meanwhile cannot inherit them. 0, or -1 with errno set.
int reel_pipe_cloexec(int fds[2]);

/// socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC): a child's standard input that this process
/// writes with `reel_send_nosignal`, so a child that exits before reading costs EPIPE, never SIGPIPE.
/// 0, or -1 with errno set.
int reel_socketpair_cloexec(int fds[2]);

/// send(fd, bytes, count, MSG_NOSIGNAL): a write to a socket whose reader is gone fails with EPIPE
/// instead of raising SIGPIPE in the whole process (which would kill a host that does not ignore it).
/// Bytes sent, or -1 with errno set.
long reel_send_nosignal(int fd, const void *bytes, unsigned long count);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor from
/// `from` up before its exec. Returns 0 or an error number.
int reel_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);

/// pidfd_open(pid, 0) (Linux 5.3): a descriptor that names this one process for as long as it is held,
/// even after the process is reaped and its number given to another. -1 with errno set on failure.
int reel_pidfd_open(pid_t pid);

/// pidfd_send_signal(pidfd, signal, NULL, 0): signals the process the descriptor names; fails with
/// ESRCH once it has ended, never reaching a process that took its number. 0, or -1 with errno set.
int reel_pidfd_send_signal(int pidfd, int signal);

/// waitid(P_PIDFD, pidfd, …, WEXITED) (Linux 5.4): waits for the process to end, retrying on EINTR;
/// with `keep` (WNOWAIT) it stays a zombie, unreaped, so its number stays its own. 0 with `*exited` 1
/// and `*value` the exit status, or `*exited` 0 and `*value` the signal; -1 with errno set on failure.
int reel_pidfd_wait(int pidfd, int keep, int *exited, int *value);

/// setxattr(2), getxattr(2) and removexattr(2) on a path, which Swift's Glibc module leaves out: the
/// queue's publish receipt lives in an extended attribute of the output itself. The usual returns
/// (0 or a size, or -1 with errno set).
int reel_setxattr(const char *path, const char *name, const void *value, unsigned long size);
long reel_getxattr(const char *path, const char *name, void *value, unsigned long size);
int reel_removexattr(const char *path, const char *name);

/// renameat2(from, to, RENAME_NOREPLACE) (Linux 3.15, glibc 2.28): moves `from` to `to` only if nothing
/// is named `to`, a file or a folder (empty or not), in one step: rename(2) would replace an empty folder
/// or a file that appeared meanwhile. 0, or -1 with errno set (EEXIST when the name is taken; EINVAL
/// where the file system cannot do it, which callers fall back from).
int reel_rename_noreplace(const char *from, const char *to);

#endif
