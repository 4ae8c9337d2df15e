// Frames between the server and its helper processes: the bwrap supervisor (supervisor.c) and the
// Docker driver's in-container agent (../../docker/agent/agent.c) speak the same framing: u32 length
// (little-endian, of what follows), u8 type, u32 id, then fields, each a u32 length and its bytes.
// Header-only (static functions): each program includes it once. Replies go to `out`.
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAME (64u << 20)
#define READ_CHUNK 65536

#pragma GCC diagnostic ignored "-Wunused-function"

/* ---------- buffers and frames ---------- */

struct buf {
  char *data;
  size_t len, cap, off;
};

static void buf_reserve(struct buf *b, size_t more) {
  if (b->len + more <= b->cap) return;
  if (b->off > 0) {
    memmove(b->data, b->data + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->len + more <= b->cap) return;
  }
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) abort();
  b->data = d;
  b->cap = cap;
}

static void buf_put(struct buf *b, const void *p, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static size_t buf_pending(const struct buf *b) { return b->len - b->off; }

static struct buf out; /* frames to the server */

static void put_u32(struct buf *b, uint32_t v) {
  unsigned char x[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};
  buf_put(b, x, 4);
}

static uint32_t get_u32(const unsigned char *p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24); }

/* One reply frame: fields given as (pointer, length) pairs, ended by a NULL pointer. */
static void reply(char type, uint32_t id, ...) {
  va_list ap, sizes;
  va_start(ap, id);
  /* Room for the whole frame first: growing the buffer may move its pending bytes to the front
   * (buf_reserve), which would leave `start` pointing elsewhere and the length prefix written into
   * another frame (a corrupt stream, seen under bursts with large outputs). */
  va_copy(sizes, ap);
  size_t total = 9;
  for (;;) {
    const char *p = va_arg(sizes, const char *);
    if (!p) break;
    total += 4 + va_arg(sizes, size_t);
  }
  va_end(sizes);
  buf_reserve(&out, total);
  size_t start = out.len;
  put_u32(&out, 0);
  buf_put(&out, &type, 1);
  put_u32(&out, id);
  for (;;) {
    const char *p = va_arg(ap, const char *);
    if (!p) break;
    size_t n = va_arg(ap, size_t);
    put_u32(&out, (uint32_t)n);
    buf_put(&out, p, n);
  }
  va_end(ap);
  uint32_t len = (uint32_t)(out.len - start - 4);
  unsigned char x[4] = {len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, len >> 24};
  memcpy(out.data + start, x, 4);
}

#define S(str) (str), strlen(str)

static void reply_status(uint32_t id, int err, const char *msg) {
  char code[16];
  snprintf(code, sizeof code, "%d", err);
  reply('R', id, S(code), S(msg), NULL);
}

struct fields {
  const unsigned char *p;
  size_t left;
};

/* The next field, or NULL (and *n = 0) past the end. */
static const char *field(struct fields *f, size_t *n) {
  if (f->left < 4) {
    *n = 0;
    return NULL;
  }
  uint32_t len = get_u32(f->p);
  if (len > f->left - 4) {
    *n = 0;
    f->left = 0;
    return NULL;
  }
  const char *v = (const char *)f->p + 4;
  f->p += 4 + len;
  f->left -= 4 + len;
  *n = len;
  return v;
}

/* A field as a NUL-terminated string (copied). */
static char *field_str(struct fields *f) {
  size_t n;
  const char *v = field(f, &n);
  char *s = malloc(n + 1);
  if (!s) abort();
  if (n) memcpy(s, v, n);
  s[n] = 0;
  return s;
}

static unsigned long long field_num(struct fields *f) {
  char *s = field_str(f);
  unsigned long long v = strtoull(s, NULL, 10);
  free(s);
  return v;
}

/* A NUL-separated list as a NULL-terminated vector pointing into one copy. */
static char **field_list(struct fields *f) {
  size_t n;
  const char *v = field(f, &n);
  char *copy = malloc(n + 1);
  if (!copy) abort();
  if (n) memcpy(copy, v, n);
  copy[n] = 0;
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    if (copy[i] == 0) count++;
  if (n && copy[n - 1] != 0) count++;
  char **vec = calloc(count + 1, sizeof(char *));
  if (!vec) abort();
  size_t k = 0;
  for (size_t i = 0; i < n && k < count;) {
    vec[k++] = copy + i;
    i += strlen(copy + i) + 1;
  }
  if (count == 0) free(copy);
  return vec;
}

static void free_list(char **v) {
  if (!v) return;
  if (v[0]) free(v[0]);
  free(v);
}

/* ---------- the server's end: requests in on fd 0, replies out on fd 1 (both non-blocking) ---------- */

/* Reads what the server sent into `in`, handing each whole frame (type, id, fields) to `handle`; one
 * too short for a type and an id is passed over. 0: nothing more for now; -1: the server is gone (end
 * of file, or an error); -2: a frame past MAX_FRAME. */
static int read_frames(struct buf *in, void (*handle)(char type, uint32_t id, struct fields *f)) {
  for (;;) {
    buf_reserve(in, READ_CHUNK);
    ssize_t n = read(0, in->data + in->len, in->cap - in->len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    if (n <= 0) return -1;
    in->len += (size_t)n;
    while (buf_pending(in) >= 4) {
      uint32_t len = get_u32((unsigned char *)in->data + in->off);
      if (len > MAX_FRAME) return -2;
      if (buf_pending(in) < 4 + (size_t)len) break;
      const unsigned char *p = (unsigned char *)in->data + in->off + 4;
      if (len >= 5) handle((char)p[0], get_u32(p + 1), &(struct fields){p + 5, len - 5});
      in->off += 4 + (size_t)len;
    }
    if ((size_t)n < READ_CHUNK) return 0;
  }
}

/* Writes what `out` holds. 1: some is left (the pipe is full: wait for EPOLLOUT); 0: all of it;
 * -1: the server is gone. */
static int flush_frames(void) {
  while (buf_pending(&out)) {
    ssize_t w = write(1, out.data + out.off, buf_pending(&out));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) return -1;
    out.off += (size_t)w;
  }
  if (!buf_pending(&out)) out.len = out.off = 0;
  return buf_pending(&out) > 0;
}
