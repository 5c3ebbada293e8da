#include "vipsshim.h"

#include <pthread.h>
#include <string.h>
#include <libheif/heif.h>
#include <vips/vips.h>

struct ReelVipsImage;

/// libheif's own size limit for the contexts the shim opens, as libvips's heifload sets it (16384): per
/// side in libheif 1.15, as an area (16384 squared, about 268 million pixels) from 1.19 on. Reel's pixel
/// limit (the input policy's maxPhotoPixels) is checked from the header on top of it.
#define REEL_HEIF_MAX_SIDE 0x4000

static VipsImage *vips_of(ReelVipsImage *image) { return (VipsImage *)image; }

static pthread_once_t started_once = PTHREAD_ONCE_INIT;
static int started_status = -1;

/// vips's warnings (a truncated JPEG, a bad ICC profile) go nowhere: the renders that matter fail on
/// them with fail_on, and their text reaches the caller through the error buffer.
static void ignore_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain;
    (void)level;
    (void)message;
    (void)data;
}

static void start_once(void) {
    if (VIPS_INIT("reel") != 0) {
        started_status = -1;
        return;
    }
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, ignore_log, NULL);
    // Only loaders that are safe for untrusted input, and of those only the photo loaders Reel renders
    // with: every other loader (TIFF, PDF, SVG, FITS, Matlab, ImageMagick, vips's own format, ...) fails
    // to build ("operation is blocked") whatever a file's bytes make libvips pick. Blocking a class
    // blocks its subclasses (the File, Buffer and Source loaders); the photo loaders are unblocked after.
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    static const char *const photo_loaders[] = {"VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadWebp",
        "VipsForeignLoadHeif", "VipsForeignLoadNsgif", "VipsForeignLoadGif", NULL};
    for (int index = 0; photo_loaders[index] != NULL; index++) vips_operation_block_set(photo_loaders[index], FALSE);
    // Photos are rendered once each: a small cache bounds memory in a long-running worker.
    vips_cache_set_max(16);
    vips_cache_set_max_mem(32 * 1024 * 1024);
    vips_cache_set_max_files(8);
    started_status = 0;
}

int reel_vips_start(void) {
    pthread_once(&started_once, start_once);
    return started_status;
}

const char *reel_vips_loader(const char *path) {
    const char *name = vips_foreign_find_load(path);
    if (name == NULL) vips_error_clear();
    return name;
}

int reel_vips_open(const char *path, ReelVipsImage **out) {
    VipsImage *image = vips_image_new_from_file(path, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (image == NULL) return -1;
    *out = (ReelVipsImage *)image;
    return 0;
}

int reel_vips_width(ReelVipsImage *image) { return vips_image_get_width(vips_of(image)); }
int reel_vips_height(ReelVipsImage *image) { return vips_image_get_height(vips_of(image)); }
int reel_vips_bands(ReelVipsImage *image) { return vips_image_get_bands(vips_of(image)); }
int reel_vips_orientation(ReelVipsImage *image) { return vips_image_get_orientation(vips_of(image)); }
int reel_vips_pages(ReelVipsImage *image) { return vips_image_get_n_pages(vips_of(image)); }

int reel_vips_bits(ReelVipsImage *image) {
    switch (vips_image_get_format(vips_of(image))) {
    case VIPS_FORMAT_USHORT:
    case VIPS_FORMAT_SHORT: return 16;
    case VIPS_FORMAT_UINT:
    case VIPS_FORMAT_INT:
    case VIPS_FORMAT_FLOAT: return 32;
    case VIPS_FORMAT_DOUBLE: return 64;
    default: return 8;
    }
}

const char *reel_vips_interpretation(ReelVipsImage *image) {
    return vips_enum_nick(VIPS_TYPE_INTERPRETATION, vips_image_get_interpretation(vips_of(image)));
}

const char *reel_vips_string(ReelVipsImage *image, const char *name) {
    const char *value = NULL;
    GType type = vips_image_get_typeof(vips_of(image), name);
    if (type != G_TYPE_STRING && type != VIPS_TYPE_REF_STRING) return NULL;
    if (vips_image_get_string(vips_of(image), name, &value) != 0) {
        vips_error_clear();
        return NULL;
    }
    return value;
}

const void *reel_vips_blob(ReelVipsImage *image, const char *name, size_t *length) {
    const void *data = NULL;
    *length = 0;
    if (vips_image_get_typeof(vips_of(image), name) == 0) return NULL;
    if (vips_image_get_blob(vips_of(image), name, &data, length) != 0) {
        vips_error_clear();
        *length = 0;
        return NULL;
    }
    return data;
}

/// vips_thumbnail_image with the colour conversion `convert` names (REEL_VIPS_COLOUR_*): none (an untagged
/// photo kept sRGB), the photo's profile to sRGB or to Display P3 (libvips's built-in "p3"), or an
/// untagged photo read as sRGB and converted to Display P3.
static int thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, int fill, int convert) {
    VipsInteresting crop = fill ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
    switch (convert) {
    case REEL_VIPS_COLOUR_NONE:
        return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop, NULL);
    case REEL_VIPS_COLOUR_SRGB_TO_P3:
        return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop,
            "import_profile", "srgb", "export_profile", "p3", NULL);
    default:
        return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop,
            "export_profile", convert == REEL_VIPS_COLOUR_TO_P3 ? "p3" : "srgb", NULL);
    }
}

/// `thumbnail`, upright, as a render's result: a copy whose EXIF Orientation is 1, so a kept EXIF block
/// says it is upright and no viewer rotates it again. Takes `thumbnail`'s reference.
static int upright_result(VipsImage *thumbnail, ReelVipsImage **out) {
    VipsImage *copy = NULL;
    int failed = vips_copy(thumbnail, &copy, NULL);
    g_object_unref(thumbnail);
    if (failed != 0) return -1;
    vips_image_set_int(copy, VIPS_META_ORIENTATION, 1);
    *out = (ReelVipsImage *)copy;
    return 0;
}

/// `image` (upright as its orientation says) fitted or filled into width x height, never enlarged, in the
/// colours `convert` names, with EXIF Orientation 1: the last steps of every render. Takes `image`'s
/// reference.
static int finish(VipsImage *image, int width, int height, int fill, int convert, ReelVipsImage **out) {
    VipsImage *thumbnail = NULL;
    int failed = thumbnail_image(image, &thumbnail, width, height, fill, convert);
    g_object_unref(image);
    if (failed != 0) return -1;
    return upright_result(thumbnail, out);
}

static int is_heif(const char *path) {
    const char *loader = vips_foreign_find_load(path);
    if (loader == NULL) {
        vips_error_clear();
        return 0;
    }
    return g_str_has_prefix(loader, "VipsForeignLoadHeif");
}

int reel_vips_thumbnail(const char *path, int width, int height, int fill, int convert, ReelVipsImage **out) {
    // vips_thumbnail would take a HEIF's embedded thumbnail whenever it is larger than the box: a lower
    // quality picture than asked for. The main picture is decoded instead (HEIF has no shrink-on-load);
    // the embedded thumbnail is reel_vips_embedded_thumbnail's, for the requests that allow it.
    if (is_heif(path)) {
        VipsImage *image = vips_image_new_from_file(
            path, "thumbnail", FALSE, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
        if (image == NULL) return -1;
        return finish(image, width, height, fill, convert, out);
    }
    VipsImage *thumbnail = NULL;
    // Only a photo with an ICC profile is converted to sRGB: one without is sRGB already, as browsers
    // read it, and an "sRGB to sRGB" pass through lcms shifted pure colours (blue 0,0,255 came out
    // 84,15,253). JPEG and WebP shrink on load.
    VipsInteresting crop = fill ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
    int converted;
    switch (convert) {
    case REEL_VIPS_COLOUR_NONE:
        converted = vips_thumbnail(path, &thumbnail, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop,
            "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
        break;
    case REEL_VIPS_COLOUR_SRGB_TO_P3:
        converted = vips_thumbnail(path, &thumbnail, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop,
            "import_profile", "srgb", "export_profile", "p3", "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
        break;
    default:
        converted = vips_thumbnail(path, &thumbnail, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", crop,
            "export_profile", convert == REEL_VIPS_COLOUR_TO_P3 ? "p3" : "srgb", "fail_on", VIPS_FAIL_ON_TRUNCATED,
            NULL);
    }
    if (converted != 0) return -1;
    return upright_result(thumbnail, out);
}

int reel_heif_thumbnail_size(const char *path, int *width, int *height) {
    *width = 0;
    *height = 0;
    struct heif_context *context = heif_context_alloc();
    if (context == NULL) return -1;
    heif_context_set_maximum_image_size_limit(context, REEL_HEIF_MAX_SIDE);
    struct heif_image_handle *handle = NULL;
    if (heif_context_read_from_file(context, path, NULL).code != heif_error_Ok
        || heif_context_get_primary_image_handle(context, &handle).code != heif_error_Ok) {
        heif_context_free(context);
        return -1;
    }
    heif_item_id id = 0;
    if (heif_image_handle_get_list_of_thumbnail_IDs(handle, &id, 1) == 1) {
        struct heif_image_handle *thumbnail = NULL;
        if (heif_image_handle_get_thumbnail(handle, id, &thumbnail).code == heif_error_Ok) {
            *width = heif_image_handle_get_width(thumbnail);
            *height = heif_image_handle_get_height(thumbnail);
            heif_image_handle_release(thumbnail);
        }
    }
    heif_image_handle_release(handle);
    heif_context_free(context);
    return 0;
}

int reel_vips_embedded_thumbnail(
    const char *path, int width, int height, int convert, ReelVipsImage **out) {
    // libvips's heifload reads the primary image's first thumbnail item with the primary's metadata.
    VipsImage *image = vips_image_new_from_file(
        path, "thumbnail", TRUE, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (image == NULL) return -1;
    return finish(image, width, height, 0, convert, out);
}

int reel_vips_reduced(const char *path, int shrink, int width, int height, int convert, ReelVipsImage **out) {
    // libjpeg decodes at 1/2, 1/4 or 1/8 scale from the DCT coefficients: a fraction of the work.
    VipsImage *image = vips_image_new_from_file(
        path, "shrink", shrink, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (image == NULL) return -1;
    return finish(image, width, height, 0, convert, out);
}

int reel_vips_crop_thumbnail(const char *path, double x, double y, double w, double h, int width, int height,
    int fill, int convert, ReelVipsImage **out) {
    VipsImage *loaded = vips_image_new_from_file(path, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (loaded == NULL) return -1;
    // HEIF's irot/imir are applied by the loader; EXIF's orientation by autorot.
    VipsImage *upright = NULL;
    int failed = vips_autorot(loaded, &upright, NULL);
    g_object_unref(loaded);
    if (failed != 0) return -1;
    int full_width = vips_image_get_width(upright), full_height = vips_image_get_height(upright);
    int left = (int)(x * full_width + 0.5), top = (int)(y * full_height + 0.5);
    int right = (int)((x + w) * full_width + 0.5), bottom = (int)((y + h) * full_height + 0.5);
    if (left < 0) left = 0;
    if (top < 0) top = 0;
    if (right > full_width) right = full_width;
    if (bottom > full_height) bottom = full_height;
    if (right - left < 1 || bottom - top < 1) {
        g_object_unref(upright);
        vips_error("reel", "the crop rectangle holds no pixel of the %dx%d picture", full_width, full_height);
        return -1;
    }
    VipsImage *area = NULL;
    failed = vips_extract_area(upright, &area, left, top, right - left, bottom - top, NULL);
    g_object_unref(upright);
    if (failed != 0) return -1;
    return finish(area, width, height, fill, convert, out);
}

int reel_vips_in_memory(ReelVipsImage *image, ReelVipsImage **out) {
    VipsImage *copy = vips_image_copy_memory(vips_of(image));
    if (copy == NULL) return -1;
    *out = (ReelVipsImage *)copy;
    return 0;
}

int reel_vips_resized(ReelVipsImage *image, int width, int height, ReelVipsImage **out) {
    VipsImage *thumbnail = NULL;
    if (vips_thumbnail_image(vips_of(image), &thumbnail, width, "height", height, "size", VIPS_SIZE_DOWN, NULL) != 0)
        return -1;
    return upright_result(thumbnail, out);
}

int reel_vips_rgba(ReelVipsImage *image, int max_side, void **pixels, int *width, int *height) {
    *pixels = NULL;
    *width = 0;
    *height = 0;
    VipsImage *small = NULL;
    if (vips_thumbnail_image(vips_of(image), &small, max_side, "height", max_side, "size", VIPS_SIZE_DOWN, NULL) != 0)
        return -1;
    // Eight-bit sRGB with alpha: grey is widened to three bands, a missing alpha made opaque.
    VipsImage *colour = NULL;
    int failed = vips_colourspace(small, &colour, VIPS_INTERPRETATION_sRGB, NULL);
    g_object_unref(small);
    if (failed != 0) return -1;
    VipsImage *alpha = NULL;
    if (vips_image_get_bands(colour) == 3) {
        failed = vips_bandjoin_const1(colour, &alpha, 255, NULL);
        g_object_unref(colour);
        if (failed != 0) return -1;
    } else {
        alpha = colour;
    }
    VipsImage *bytes = NULL;
    failed = vips_cast_uchar(alpha, &bytes, NULL);
    g_object_unref(alpha);
    if (failed != 0) return -1;
    if (vips_image_get_bands(bytes) != 4) {
        g_object_unref(bytes);
        vips_error("reel", "the picture has %d bands, not RGBA", vips_image_get_bands(bytes));
        return -1;
    }
    size_t size = 0;
    void *memory = vips_image_write_to_memory(bytes, &size);
    *width = vips_image_get_width(bytes);
    *height = vips_image_get_height(bytes);
    g_object_unref(bytes);
    if (memory == NULL || size != (size_t)*width * (size_t)*height * 4) {
        g_free(memory);
        vips_error("reel", "the picture's pixels could not be read");
        return -1;
    }
    *pixels = memory;
    return 0;
}

/// Whether the field `name` says where the photo was taken, with what, or which Live Photo it belongs to:
/// the GPS IFD, the device's make, model, lens and serial numbers, the maker note (Apple's holds the
/// content identifier), and XMP and IPTC packets (which may repeat them).
static gboolean is_private(const char *name) {
    static const char *const exact[] = {"exif-ifd0-Make", "exif-ifd0-Model", "exif-ifd0-Software",
        "exif-ifd0-HostComputer", "exif-ifd2-MakerNote", "exif-ifd2-LensMake", "exif-ifd2-LensModel",
        "exif-ifd2-LensSpecification", "exif-ifd2-BodySerialNumber", "exif-ifd2-LensSerialNumber",
        "exif-ifd2-CameraOwnerName", "exif-ifd2-ImageUniqueID", "xmp-data", "iptc-data", NULL};
    if (g_str_has_prefix(name, "exif-ifd3-")) return TRUE;
    for (int index = 0; exact[index] != NULL; index++) {
        if (strcmp(name, exact[index]) == 0) return TRUE;
    }
    return FALSE;
}

int reel_vips_save(ReelVipsImage *image, int format, int quality, int metadata, void **buffer, size_t *length) {
    VipsImage *in = vips_of(image);
    gboolean strip = metadata == REEL_VIPS_STRIP ? TRUE : FALSE;
    if (metadata == REEL_VIPS_STRIP_KEEP_ICC) {
        // Nothing but the colour profile, which a picture in a colour space other than sRGB needs to be
        // read right (a Display P3 render with its metadata stripped).
        gchar **fields = vips_image_get_fields(in);
        for (int index = 0; fields[index] != NULL; index++) {
            const char *name = fields[index];
            if (strcmp(name, VIPS_META_ICC_NAME) != 0
                && (g_str_has_prefix(name, "exif-") || g_str_has_prefix(name, "xmp-")
                    || g_str_has_prefix(name, "iptc-") || g_str_has_prefix(name, "heif-")
                    || strcmp(name, VIPS_META_ORIENTATION) == 0))
                vips_image_remove(in, name);
        }
        g_strfreev(fields);
    }
    if (metadata == REEL_VIPS_SHARING) {
        // The savers rebuild the EXIF block from the image's exif-* fields and drop the tags whose
        // fields are gone.
        gchar **fields = vips_image_get_fields(in);
        for (int index = 0; fields[index] != NULL; index++) {
            if (is_private(fields[index])) vips_image_remove(in, fields[index]);
        }
        g_strfreev(fields);
    }
    *buffer = NULL;
    *length = 0;
    switch (format) {
    case REEL_VIPS_JPEG:
        return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", strip, "optimize_coding", TRUE, NULL);
    case REEL_VIPS_WEBP: return vips_webpsave_buffer(in, buffer, length, "Q", quality, "strip", strip, NULL);
    case REEL_VIPS_PNG: return vips_pngsave_buffer(in, buffer, length, "strip", strip, NULL);
    case REEL_VIPS_AVIF:
        return vips_heifsave_buffer(in, buffer, length, "Q", quality, "strip", strip, "compression",
            VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
    default: vips_error("reel", "unknown output format %d", format); return -1;
    }
}

int reel_heif_facts(const char *path, ReelHeifFacts *facts) {
    memset(facts, 0, sizeof *facts);
    struct heif_context *context = heif_context_alloc();
    if (context == NULL) return -1;
    heif_context_set_maximum_image_size_limit(context, REEL_HEIF_MAX_SIDE);
    struct heif_image_handle *handle = NULL;
    if (heif_context_read_from_file(context, path, NULL).code != heif_error_Ok
        || heif_context_get_primary_image_handle(context, &handle).code != heif_error_Ok) {
        heif_context_free(context);
        return -1;
    }
    facts->luma_bits = heif_image_handle_get_luma_bits_per_pixel(handle);
    facts->depth = heif_image_handle_has_depth_image(handle) ? 1 : 0;
    facts->thumbnails = heif_image_handle_get_number_of_thumbnails(handle);
    struct heif_color_profile_nclx *nclx = NULL;
    if (heif_image_handle_get_nclx_color_profile(handle, &nclx).code == heif_error_Ok && nclx != NULL) {
        facts->nclx = 1;
        facts->primaries = (int)nclx->color_primaries;
        facts->transfer = (int)nclx->transfer_characteristics;
        facts->matrix = (int)nclx->matrix_coefficients;
        facts->full_range = nclx->full_range_flag ? 1 : 0;
        heif_nclx_color_profile_free(nclx);
    }
    const int filter = LIBHEIF_AUX_IMAGE_FILTER_OMIT_ALPHA | LIBHEIF_AUX_IMAGE_FILTER_OMIT_DEPTH;
    int count = heif_image_handle_get_number_of_auxiliary_images(handle, filter);
    facts->auxiliaries = count;
    heif_item_id ids[64];
    if (count > 64) count = 64;
    int listed = count > 0 ? heif_image_handle_get_list_of_auxiliary_image_IDs(handle, filter, ids, count) : 0;
    for (int index = 0; index < listed; index++) {
        struct heif_image_handle *auxiliary = NULL;
        if (heif_image_handle_get_auxiliary_image_handle(handle, ids[index], &auxiliary).code != heif_error_Ok)
            continue;
        const char *type = NULL;
        if (heif_image_handle_get_auxiliary_type(auxiliary, &type).code == heif_error_Ok && type != NULL) {
            if (strstr(type, "hdrgainmap") != NULL) facts->gain_map = 1;
            heif_image_handle_free_auxiliary_types(auxiliary, &type);
        }
        heif_image_handle_release(auxiliary);
    }
    heif_image_handle_release(handle);
    heif_context_free(context);
    return 0;
}

void reel_vips_release(ReelVipsImage *image) {
    if (image != NULL) g_object_unref(vips_of(image));
}

void reel_vips_free(void *buffer) { g_free(buffer); }

char *reel_vips_take_error(void) {
    char *text = vips_error_buffer_copy();
    if (text == NULL) return NULL;
    size_t length = strlen(text);
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == ' ')) text[--length] = '\0';
    if (length == 0) {
        g_free(text);
        return NULL;
    }
    // One line: later lines joined with "; ".
    GString *line = g_string_new(NULL);
    char *state = NULL;
    for (char *part = strtok_r(text, "\n", &state); part != NULL; part = strtok_r(NULL, "\n", &state)) {
        if (line->len > 0) g_string_append(line, "; ");
        g_string_append(line, part);
    }
    g_free(text);
    return g_string_free(line, FALSE);
}
