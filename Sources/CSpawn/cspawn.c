// GNU extensions that Swift's Glibc module leaves out (it is built without _GNU_SOURCE).
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include "cspawn.h"

int reel_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int reel_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
