#ifndef REEL_CSPAWN_H
#define REEL_CSPAWN_H

#include <spawn.h>

/// pipe2(fds, O_CLOEXEC): both ends close-on-exec from the start, so a child another thread spawns
/// meanwhile cannot inherit them. 0, or -1 with errno set.
int reel_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor from
/// `from` up before its exec. Returns 0 or an error number.
int reel_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);

#endif
