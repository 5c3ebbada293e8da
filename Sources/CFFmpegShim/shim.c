#define _GNU_SOURCE
#include "shim.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <libavutil/log.h>

void reel_error_string(int code, char *buffer, size_t size) {
    if (av_strerror(code, buffer, size) < 0) snprintf(buffer, size, "error %d", code);
}

// The one sink, shared by every thread that logs.
static reel_log_sink current_sink = NULL;

// FFmpeg sends some lines in pieces; like av_log_default_callback, the prefix ("[libx264 @ 0x…]")
// is written only at the start of a line, and the pieces are collected until the line ends. Both
// are process-wide state, guarded by one mutex (only lines that pass the level get here: rare).
static pthread_mutex_t line_mutex = PTHREAD_MUTEX_INITIALIZER;
static int print_prefix = 1;
static char pending[2048];
static size_t pending_length = 0;

static void log_trampoline(void *avcl, int level, const char *fmt, va_list vl) {
    if (level > av_log_get_level()) return;
    reel_log_sink sink = __atomic_load_n(&current_sink, __ATOMIC_ACQUIRE);
    if (!sink) return;
    char piece[1024];
    char line[sizeof pending];
    int complete = 0;
    pthread_mutex_lock(&line_mutex);
    if (av_log_format_line2(avcl, level, fmt, vl, piece, sizeof piece, &print_prefix) >= 0) {
        size_t length = strnlen(piece, sizeof piece);
        size_t room = sizeof pending - 1 - pending_length;
        if (length > room) length = room;  // an overlong line is cut, never overrun
        memcpy(pending + pending_length, piece, length);
        pending_length += length;
        pending[pending_length] = 0;
        if (print_prefix || pending_length == sizeof pending - 1) {
            // print_prefix is set again once a piece ended the line.
            memcpy(line, pending, pending_length + 1);
            pending_length = 0;
            complete = 1;
        }
    }
    pthread_mutex_unlock(&line_mutex);
    if (complete) sink(level, line);
}

void reel_install_log_sink(reel_log_sink sink) {
    __atomic_store_n(&current_sink, sink, __ATOMIC_RELEASE);
    av_log_set_callback(sink ? log_trampoline : av_log_default_callback);
}

int reel_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, (off64_t)offset, (off64_t)length, SYNC_FILE_RANGE_WRITE);
}

void reel_trim_heap(void) { (void)malloc_trim(0); }
