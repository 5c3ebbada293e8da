#ifndef REEL_VIPS_SHIM_H
#define REEL_VIPS_SHIM_H

#include <stddef.h>
#include <stdint.h>

// Plain C over libvips for ReelImage: no GObject types, no variadic calls. Every function returns 0 on
// success and -1 on failure, with vips's message kept for reel_vips_take_error().

/// An image (a VipsImage), owned by the caller until reel_vips_release.
typedef struct ReelVipsImage ReelVipsImage;

/// Starts libvips once per process (later calls return the first result): VIPS_INIT, a small operation
/// cache, vips's own warnings kept off stderr.
int reel_vips_start(void);

/// The loader libvips would read `path` with, by its content ("VipsForeignLoadJpegFile", …), or NULL
/// when none reads it (vips's error then cleared); static storage.
const char *reel_vips_loader(const char *path);

/// The header of the photo at `path` (pixels are decoded only when rendered; a truncated file then
/// fails rather than loading grey).
int reel_vips_open(const char *path, ReelVipsImage **out);

/// The facts the header gives.
int reel_vips_width(ReelVipsImage *image);
int reel_vips_height(ReelVipsImage *image);
int reel_vips_bands(ReelVipsImage *image);
/// The EXIF orientation vips will apply (1 when none or already applied by the loader).
int reel_vips_orientation(ReelVipsImage *image);
/// The number of pages (frames) the file has (1 for most photos).
int reel_vips_pages(ReelVipsImage *image);
/// Bits per sample of the decoded pixels (8 or 16).
int reel_vips_bits(ReelVipsImage *image);
/// vips's interpretation: "srgb", "b-w", "rgb16", "cmyk", …; static storage.
const char *reel_vips_interpretation(ReelVipsImage *image);
/// A string field ("vips-loader", "heif-compression"), or NULL; valid while the image is.
const char *reel_vips_string(ReelVipsImage *image, const char *name);
/// A blob field ("icc-profile-data", "exif-data"), or NULL with *length 0; valid while the image is.
const void *reel_vips_blob(ReelVipsImage *image, const char *name, size_t *length);

/// `path` decoded upright (EXIF orientation or HEIF irot/imir applied), shrunk on load (JPEG, WebP) and
/// resampled to fit `width`x`height` (`fill` = cover the box and crop the centre), never enlarged, in the
/// colours `convert` names (REEL_VIPS_COLOUR_*: sRGB or Display P3, from the embedded profile or, for an
/// untagged photo, sRGB). A HEIF's main picture is decoded, never its embedded thumbnail. The result's
/// EXIF orientation is 1.
int reel_vips_thumbnail(const char *path, int width, int height, int fill, int convert, ReelVipsImage **out);
/// The size of the first embedded thumbnail item of a HEIF file's primary image (libheif's
/// heif_image_handle_get_list_of_thumbnail_IDs), 0x0 when it has none; -1 when libheif cannot read it.
int reel_heif_thumbnail_size(const char *path, int *width, int *height);
/// A HEIF file's embedded thumbnail (as reel_heif_thumbnail_size names it), upright, in the colours
/// `convert` names, fitted into width x height when it is larger.
int reel_vips_embedded_thumbnail(const char *path, int width, int height, int convert, ReelVipsImage **out);
/// A JPEG decoded at 1/`shrink` of its size (2, 4 or 8: libjpeg's reduced DCT), upright, in the colours
/// `convert` names, fitted into width x height when it is larger.
int reel_vips_reduced(const char *path, int shrink, int width, int height, int convert, ReelVipsImage **out);
/// As reel_vips_thumbnail, of the part of the upright picture the unit rectangle (x, y, w, h) names
/// (PhotoKit's normalizedCropRect): decoded whole, turned upright, cut, then fitted or filled.
int reel_vips_crop_thumbnail(const char *path, double x, double y, double w, double h, int width, int height,
    int fill, int convert, ReelVipsImage **out);

/// `image`'s pixels computed once and held in memory, so that several renders derived from it (a
/// preview, then a thumbnail) do not decode the photo again. Does not take `image`'s reference.
int reel_vips_in_memory(ReelVipsImage *image, ReelVipsImage **out);
/// `image` (upright, already in its output colours) resampled to fit width x height, never enlarged,
/// with EXIF Orientation 1. Does not take `image`'s reference.
int reel_vips_resized(ReelVipsImage *image, int width, int height, ReelVipsImage **out);
/// `image` fitted into max_side x max_side and returned as 8-bit RGBA pixels, row by row (*pixels freed
/// with reel_vips_free; a photo without alpha gets 255).
int reel_vips_rgba(ReelVipsImage *image, int max_side, void **pixels, int *width, int *height);

/// Saver formats.
enum { REEL_VIPS_JPEG = 0, REEL_VIPS_WEBP = 1, REEL_VIPS_PNG = 2, REEL_VIPS_AVIF = 3 };

/// Metadata policies: none at all; all of it (EXIF with Orientation 1, XMP, IPTC); all but location,
/// device and the maker note (Apple's content identifier), and no XMP or IPTC; none but the ICC profile
/// (a picture outside sRGB needs it to be read right) and the structural EXIF tags libvips writes into
/// any EXIF block it makes (size, resolution, versions, Orientation 1).
enum { REEL_VIPS_STRIP = 0, REEL_VIPS_KEEP = 1, REEL_VIPS_SHARING = 2, REEL_VIPS_STRIP_KEEP_ICC = 3 };
/// The colour conversion of a render (the `convert` argument): none (an untagged photo stays as it is,
/// sRGB), the photo's ICC profile to sRGB, the photo's profile to Display P3, an untagged photo read as
/// sRGB to Display P3.
enum {
    REEL_VIPS_COLOUR_NONE = 0,
    REEL_VIPS_COLOUR_TO_SRGB = 1,
    REEL_VIPS_COLOUR_TO_P3 = 2,
    REEL_VIPS_COLOUR_SRGB_TO_P3 = 3
};

/// `image` encoded in memory (`quality` 1-100 for JPEG, WebP and AVIF) with `metadata` as the policy
/// says (REEL_VIPS_SHARING removes fields from `image` itself); free *buffer with reel_vips_free.
/// Decoding happens here: a damaged file fails here.
int reel_vips_save(ReelVipsImage *image, int format, int quality, int metadata, void **buffer, size_t *length);

/// What libheif says about a HEIF file's primary image beyond what vips reports.
typedef struct ReelHeifFacts {
    /// 1 when the file has an nclx colour box, with its code points (ITU-T H.273).
    int nclx;
    int primaries;
    int transfer;
    int matrix;
    int full_range;
    /// 1 with a depth image.
    int depth;
    /// 1 with an HDR gain map (an auxiliary image whose type names hdrgainmap, Apple's among them).
    int gain_map;
    /// Auxiliary images other than alpha and depth (gain maps, mattes).
    int auxiliaries;
    /// Embedded thumbnail images.
    int thumbnails;
    /// Bits per luma sample as coded.
    int luma_bits;
} ReelHeifFacts;

/// libheif's reading of `path`'s primary image (the metadata only; no picture is decoded).
int reel_heif_facts(const char *path, ReelHeifFacts *facts);

void reel_vips_release(ReelVipsImage *image);
void reel_vips_free(void *buffer);

/// vips's error text since the last call, as one line (newlines become "; "), and clears it; free with
/// reel_vips_free. NULL when there is none.
char *reel_vips_take_error(void);

#endif
