// libvips 8.14 (Debian 12's libvips-dev, with libheif 1.15 for HEIF and AVIF), and libheif itself for
// what vips does not report (nclx colour, depth and gain-map images, embedded thumbnails). Only CVipsShim includes
// it: Swift sees the shim's plain C functions, never GObject or vips's variadic calls.
#include <vips/vips.h>
#include <libheif/heif.h>
