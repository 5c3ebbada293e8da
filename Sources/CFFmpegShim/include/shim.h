// Bridges for the parts of FFmpeg 5.1's C API that Swift cannot import: function-like macros,
// macro constants with casts, and the variadic log callback; plus two Linux calls glibc hides.
// Everything else ReelMedia imports directly from CFFmpeg. Only ReelMedia imports this module.
#ifndef REEL_CFFMPEG_SHIM_H
#define REEL_CFFMPEG_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>

// AVERROR(e) is a macro: negates a POSIX errno into FFmpeg's error space.
static inline int reel_averror(int e) { return AVERROR(e); }
// AVERROR_EOF is built with FFERRTAG, a macro Swift cannot evaluate.
static inline int reel_averror_eof(void) { return AVERROR_EOF; }
// AVERROR_EXIT: what a blocking call returns when the interrupt callback asked it to stop.
static inline int reel_averror_exit(void) { return AVERROR_EXIT; }
// AVERROR_INVALIDDATA and AVERROR_DEMUXER_NOT_FOUND are FFERRTAG macros too.
static inline int reel_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int reel_averror_demuxer_not_found(void) { return AVERROR_DEMUXER_NOT_FOUND; }
static inline int reel_averror_patchwelcome(void) { return AVERROR_PATCHWELCOME; }
static inline int reel_averror_experimental(void) { return AVERROR_EXPERIMENTAL; }
// AV_NOPTS_VALUE is a cast expression ((int64_t)UINT64_C(0x8000000000000000)).
static inline int64_t reel_nopts_value(void) { return AV_NOPTS_VALUE; }
// AV_TIME_BASE_Q is a compound literal.
static inline AVRational reel_time_base_q(void) { return AV_TIME_BASE_Q; }
// MKTAG is a macro; used for the 'hvc1' sample-entry tag Apple players require for HEVC.
static inline unsigned int reel_mktag(char a, char b, char c, char d) { return MKTAG(a, b, c, d); }

// av_err2str is a macro over a compound-literal buffer; this writes into the caller's buffer instead.
void reel_error_string(int code, char *buffer, size_t size);

// FFmpeg's log callback is variadic (va_list), which Swift cannot receive. The installed trampoline
// (shim.c) drops lines above av_log_get_level(), formats the rest with av_log_format_line2, joins
// the pieces FFmpeg sends for one line, and hands level and text to `sink`, a Swift
// @convention(c) function. FFmpeg's and the codecs' threads call it while a caller may change the
// sink: it is read and written atomically. Passing NULL restores FFmpeg's default callback.
typedef void (*reel_log_sink)(int level, const char *line);
void reel_install_log_sink(reel_log_sink sink);

// Starts writeback of a file range without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE): the final fsync then has little left to do. glibc declares
// sync_file_range only under _GNU_SOURCE, which shim.c defines. Returns 0 or -1 with errno set; a
// failure costs nothing but the overlap, so callers may ignore it.
int reel_start_writeback(int fd, int64_t offset, int64_t length);

// Returns the heap's free pages to the system (glibc's malloc_trim). A process that runs export
// after export (an in-process worker) otherwise keeps each thread arena's high-water mark.
void reel_trim_heap(void);

// SSIM and PSNR of encoded pictures against their references (quality.c).
#include "quality.h"

#endif
