// FFmpeg 5.1's public headers, as Debian 12 installs them: everything ReelMedia calls is imported
// from here directly. What Swift cannot import (function-like macros, compound literals, the
// variadic log callback) is bridged by the CFFmpegShim target.
#ifndef REEL_CFFMPEG_H
#define REEL_CFFMPEG_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/dovi_meta.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/sha.h>
#include <libavutil/timestamp.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

#endif
