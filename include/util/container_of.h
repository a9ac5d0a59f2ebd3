/*
 * container_of.h - from a member (a libev watcher) back to the object that
 * holds it: the watcher lives inside the object it serves.
 */
#ifndef SPOA_CONTAINER_OF_H
#define SPOA_CONTAINER_OF_H

#include <stddef.h>

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif /* SPOA_CONTAINER_OF_H */
