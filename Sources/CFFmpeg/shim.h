// Bridges for the parts of FFmpeg 5.1's C API that Swift cannot import: function-like macros,
// macro constants with casts, and the variadic log callback. Everything else is imported directly.
#ifndef REEL_CFFMPEG_SHIM_H
#define REEL_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/timestamp.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

// AVERROR(e) is a macro: negates a POSIX errno into FFmpeg's error space.
static inline int reel_averror(int e) { return AVERROR(e); }
// AVERROR_EOF is built with FFERRTAG, a macro Swift cannot evaluate.
static inline int reel_averror_eof(void) { return AVERROR_EOF; }
// AVERROR_EXIT: what a blocking call returns when the interrupt callback asked it to stop.
static inline int reel_averror_exit(void) { return AVERROR_EXIT; }
// AVERROR_INVALIDDATA and AVERROR_DECODER_NOT_FOUND are FFERRTAG macros too.
static inline int reel_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int reel_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int reel_averror_demuxer_not_found(void) { return AVERROR_DEMUXER_NOT_FOUND; }
// AV_NOPTS_VALUE is a cast expression ((int64_t)UINT64_C(0x8000000000000000)).
static inline int64_t reel_nopts_value(void) { return AV_NOPTS_VALUE; }
// AV_TIME_BASE_Q is a compound literal.
static inline AVRational reel_time_base_q(void) { return AV_TIME_BASE_Q; }
// av_err2str is a macro over a compound-literal buffer; this writes into the caller's buffer instead.
static inline void reel_error_string(int code, char *buffer, size_t size) {
    if (av_strerror(code, buffer, size) < 0) snprintf(buffer, size, "error %d", code);
}
// MKTAG is a macro; used for the 'hvc1' sample-entry tag Apple players require for HEVC.
static inline unsigned int reel_mktag(char a, char b, char c, char d) { return MKTAG(a, b, c, d); }

// FFmpeg's log callback is variadic (va_list), which Swift cannot receive. This trampoline formats
// the line with av_log_format_line2 and hands level and text to a Swift @convention(c) function.
// The sink is read by FFmpeg's (and x264's) threads while a caller may set it: atomic access only.
// Only FFmpegLog.swift includes the calls that touch it, so the one copy of this static is shared.
typedef void (*reel_log_sink)(int level, const char *line);
static reel_log_sink reel_current_log_sink = 0;
static inline void reel_log_trampoline(void *avcl, int level, const char *fmt, va_list vl) {
    if (level > av_log_get_level()) return;
    reel_log_sink sink = __atomic_load_n(&reel_current_log_sink, __ATOMIC_ACQUIRE);
    if (!sink) return;
    char line[1024];
    int print_prefix = 1;
    if (av_log_format_line2(avcl, level, fmt, vl, line, sizeof line, &print_prefix) < 0) return;
    sink(level, line);
}
static inline void reel_install_log_sink(reel_log_sink sink) {
    __atomic_store_n(&reel_current_log_sink, sink, __ATOMIC_RELEASE);
    av_log_set_callback(sink ? reel_log_trampoline : av_log_default_callback);
}

// The interrupt callback lets a blocking read return early: `opaque` points at an int flag that
// another thread sets (atomically) to request the stop.
static inline int reel_interrupt_callback(void *opaque) {
    return opaque && __atomic_load_n((const int *)opaque, __ATOMIC_RELAXED) != 0;
}
static inline void reel_set_interrupt(AVFormatContext *ctx, int *flag) {
    ctx->interrupt_callback.callback = reel_interrupt_callback;
    ctx->interrupt_callback.opaque = flag;
}
static inline void reel_atomic_store_int(int *flag, int value) {
    __atomic_store_n(flag, value, __ATOMIC_RELAXED);
}
static inline int reel_atomic_load_int(const int *flag) {
    return __atomic_load_n(flag, __ATOMIC_RELAXED);
}

#endif

// Starts writeback of a file range without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE): the final fsync then has little left to do. Through syscall(2) because
// glibc declares sync_file_range only under _GNU_SOURCE. Returns 0 or -1 with errno set; a
// failure costs nothing but the overlap, so callers may ignore it.
static inline int reel_start_writeback(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(SYS_sync_file_range)
    return (int)syscall(SYS_sync_file_range, fd, (long long)offset, (long long)length, 2u /* SYNC_FILE_RANGE_WRITE */);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

// Returns the heap's free pages to the system (glibc). A process that runs export after export
// (an in-process worker) otherwise keeps each thread arena's high-water mark.
static inline void reel_trim_heap(void) { (void)malloc_trim(0); }
