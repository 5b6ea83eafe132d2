#include "format/image_decode.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "base/mapped_file.h"

#if GEMLET_HAVE_JPEG
#include <jpeglib.h>
#include <jerror.h>
#endif
#if GEMLET_HAVE_PNG
#include <png.h>
#endif
#if GEMLET_HAVE_WEBP
#include <webp/decode.h>
#endif

namespace gemlet {

namespace {

uint32_t ReadU(const uint8_t* p, int n, bool le) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[le ? i : n - 1 - i]) << (8 * i);
  return v;
}

std::string Dims(int64_t w, int64_t h) { return std::to_string(w) + "×" + std::to_string(h); }

// The size checks every decoder makes from the header, before decoding.
Status CheckSize(const std::string& name, const char* fmt, int64_t w, int64_t h, const ImageDecodeOptions& o) {
  if (w <= 0 || h <= 0) {
    return Corrupt(name + ": the " + std::string(fmt) + " header declares an empty image (" + Dims(w, h) + ")");
  }
  if (w > o.max_pixels / h) {
    return OutOfRange(name + ": the " + std::string(fmt) + " image is " + Dims(w, h) + " pixels, over the budget of " +
                      std::to_string(o.max_pixels) + " pixels; refused before decoding");
  }
  return Status::Ok();
}

#if GEMLET_HAVE_JPEG
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings libjpeg recovers from by inventing data (a truncated stream filled with grey, a
// corrupt entropy segment) are errors here, as Pillow raises "image file is truncated".
void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  const int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL) {
    JpegErrorExit(cinfo);
  }
}

// Decodes into *img (declared before the setjmp so that a longjmp skips no destructor here).
Status DecodeJpeg(const uint8_t* data, size_t size, const std::string& name, const ImageDecodeOptions& o,
                  RgbImage* img, int* orientation) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegEmitMessage;
  err.message[0] = '\0';
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Corrupt(name + ": corrupt or truncated JPEG (" + std::string(err.message) + ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&cinfo, TRUE);
  if (Status st = CheckSize(name, "JPEG", cinfo.image_width, cinfo.image_height, o); !st.ok()) {
    jpeg_destroy_decompress(&cinfo);
    return st;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return Unsupported(name + ": CMYK JPEG images are not supported (convert it to RGB)");
  }
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      *orientation = ExifOrientation(m->data + 6, m->data_length - 6);
      break;
    }
  }
  cinfo.out_color_space = JCS_RGB;  // Pillow's defaults otherwise: islow DCT, fancy upsampling
  jpeg_start_decompress(&cinfo);
  img->width = cinfo.output_width;
  img->height = cinfo.output_height;
  img->pixels.resize(static_cast<size_t>(img->width * img->height * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img->pixels.data() + static_cast<size_t>(cinfo.output_scanline) * img->width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return Status::Ok();
}
#endif  // GEMLET_HAVE_JPEG

#if GEMLET_HAVE_PNG
struct PngReader {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[256];
};

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (r->size - r->pos < n) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void PngErrorFn(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", msg);
  png_longjmp(png, 1);
}

void PngWarnFn(png_structp, png_const_charp) {}

Status DecodePng(const uint8_t* data, size_t size, const std::string& name, const ImageDecodeOptions& o,
                 RgbImage* img, std::vector<png_bytep>* rows) {
  // The size from IHDR (the first chunk) before libpng reads on: a header with no data behind
  // it still gets the size error, and a huge size is refused before anything else is read.
  if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
    RETURN_IF_ERROR(CheckSize(name, "PNG", ReadU(data + 16, 4, false), ReadU(data + 20, 4, false), o));
  }
  PngReader reader{data, size, 0, {0}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, PngErrorFn, PngWarnFn);
  if (!png) return Internal(name + ": libpng could not start");
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Corrupt(name + ": corrupt or truncated PNG (" + std::string(reader.message) + ")");
  }
  if (!info) png_error(png, "out of memory");
  // A bad CRC is an error in every chunk, as in Pillow (not libpng's warn-and-skip).
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  png_set_read_fn(png, &reader, PngRead);
  png_read_info(png, info);
  const int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (Status st = CheckSize(name, "PNG", w, h, o); !st.ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return st;
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * 3) png_error(png, "unexpected row layout");
  img->width = w;
  img->height = h;
  img->pixels.resize(static_cast<size_t>(w * h * 3));
  rows->resize(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; ++y) (*rows)[y] = img->pixels.data() + y * w * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return Status::Ok();
}
#endif  // GEMLET_HAVE_PNG

#if GEMLET_HAVE_WEBP
Status DecodeWebp(const uint8_t* data, size_t size, const std::string& name, const ImageDecodeOptions& o,
                  RgbImage* img) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, size, &f) != VP8_STATUS_OK) {
    return Corrupt(name + ": corrupt or truncated WebP header");
  }
  RETURN_IF_ERROR(CheckSize(name, "WebP", f.width, f.height, o));
  if (f.has_animation) return Unsupported(name + ": animated WebP images are not supported");
  img->width = f.width;
  img->height = f.height;
  img->pixels.resize(static_cast<size_t>(img->width * img->height * 3));
  if (!WebPDecodeRGBInto(data, size, img->pixels.data(), img->pixels.size(), static_cast<int>(img->width * 3))) {
    return Corrupt(name + ": corrupt or truncated WebP image data");
  }
  return Status::Ok();
}
#endif  // GEMLET_HAVE_WEBP

}  // namespace

const char* SniffImageFormat(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "jpeg";
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "png";
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "webp";
  return "";
}

int ExifOrientation(const uint8_t* t, size_t n) {
  if (n < 8) return 1;
  bool le;
  if (t[0] == 'I' && t[1] == 'I') {
    le = true;
  } else if (t[0] == 'M' && t[1] == 'M') {
    le = false;
  } else {
    return 1;
  }
  if (ReadU(t + 2, 2, le) != 42) return 1;
  const uint64_t ifd = ReadU(t + 4, 4, le);
  if (ifd + 2 > n) return 1;
  const uint32_t count = ReadU(t + ifd, 2, le);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t e = ifd + 2 + 12ull * i;
    if (e + 12 > n) return 1;
    if (ReadU(t + e, 2, le) != 0x0112) continue;
    if (ReadU(t + e + 2, 2, le) != 3 || ReadU(t + e + 4, 4, le) < 1) return 1;  // SHORT, count ≥ 1
    const uint32_t o = ReadU(t + e + 8, 2, le);
    return o >= 1 && o <= 8 ? static_cast<int>(o) : 1;
  }
  return 1;
}

void ApplyExifOrientation(int o, RgbImage* img) {
  if (o < 2 || o > 8) return;
  const int64_t H = img->height, W = img->width;
  const bool swap = o >= 5;  // transpose, rotations by 90°, transverse
  const int64_t oh = swap ? W : H, ow = swap ? H : W;
  std::vector<uint8_t> out(img->pixels.size());
  for (int64_t y = 0; y < oh; ++y) {
    for (int64_t x = 0; x < ow; ++x) {
      int64_t sy = y, sx = x;  // Pillow's Image.transpose per orientation (ImageOps.exif_transpose)
      switch (o) {
        case 2: sx = W - 1 - x; break;                       // FLIP_LEFT_RIGHT
        case 3: sy = H - 1 - y; sx = W - 1 - x; break;       // ROTATE_180
        case 4: sy = H - 1 - y; break;                       // FLIP_TOP_BOTTOM
        case 5: sy = x; sx = y; break;                       // TRANSPOSE
        case 6: sy = H - 1 - x; sx = y; break;               // ROTATE_270 (90° clockwise)
        case 7: sy = H - 1 - x; sx = W - 1 - y; break;       // TRANSVERSE
        case 8: sy = x; sx = W - 1 - y; break;               // ROTATE_90 (90° counter-clockwise)
      }
      std::memcpy(&out[(y * ow + x) * 3], &img->pixels[(sy * W + sx) * 3], 3);
    }
  }
  img->pixels = std::move(out);
  img->height = oh;
  img->width = ow;
}

Result<RgbImage> DecodeImage(const uint8_t* data, size_t size, const std::string& name,
                             const ImageDecodeOptions& o) {
  const std::string fmt = SniffImageFormat(data, size);
  RgbImage img;
  if (fmt.empty()) {
    return Unsupported(name + ": not a JPEG, PNG or WebP image (unknown signature, " + std::to_string(size) +
                           " bytes)");
  }
  if (fmt == "jpeg") {
#if GEMLET_HAVE_JPEG
    int orientation = 1;
    RETURN_IF_ERROR(DecodeJpeg(data, size, name, o, &img, &orientation));
    if (o.apply_exif_orientation) ApplyExifOrientation(orientation, &img);
    return img;
#endif
  } else if (fmt == "png") {
#if GEMLET_HAVE_PNG
    std::vector<png_bytep> rows;
    RETURN_IF_ERROR(DecodePng(data, size, name, o, &img, &rows));
    return img;
#endif
  } else if (fmt == "webp") {
#if GEMLET_HAVE_WEBP
    RETURN_IF_ERROR(DecodeWebp(data, size, name, o, &img));
    return img;
#endif
  }
  return Unsupported(name + ": this build of gemlet has no " + fmt + " decoder (its library was not found)");
}

Result<RgbImage> DecodeImageFile(const std::string& path, const ImageDecodeOptions& o) {
  ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
  return DecodeImage(map->data(), map->size(), path, o);
}

}  // namespace gemlet
