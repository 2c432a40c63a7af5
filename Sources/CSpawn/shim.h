#ifndef LVB_CSPAWN_SHIM_H
#define LVB_CSPAWN_SHIM_H
#include <spawn.h>

/* glibc 2.34+ (Debian 12 has 2.36): the child closes every descriptor from
   `from` up before it runs the program, and the parent's are left alone.
   glibc declares it only under _GNU_SOURCE, which the Glibc module is not
   built with. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

static inline int lvb_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
#endif
