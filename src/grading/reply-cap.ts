// A cap on a model endpoint's reply, for the rollout command's model client and the model graders'.
// The OpenAI SDK reads a reply whole (response.json()), so a huge or endless body from a broken or
// hostile endpoint is buffered until the process dies (2 GB chunked at --concurrency 3: 7.8 GB RSS,
// then "Cannot create a string longer than 0x1fffffe8"). The body is counted while it streams; past
// the cap the request is aborted (nothing more is read) and the read fails with the caller's coded
// error: the rollout command discards that rollout alone, a model grader fails that grade (a 502).

/** Default for --max-reply-bytes and the model graders' cap: far above any model turn, far below what hurts the process. */
export const DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024;

/** `fetch` for the SDK (its `fetch` option) whose replies fail past `maxBytes`, with `tooLarge(maxBytes)`. */
export function cappedFetch(maxBytes: number, tooLarge: (limit: number) => Error, inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const res = await inner(input, init);
    if (!res.body) return res;
    // A declared length over the cap fails before a byte is read; a compressed body's declared
    // length says nothing about its decoded size, so only the count below judges it.
    const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
    const declared = encoded ? NaN : Number(res.headers.get('content-length') ?? NaN);
    return new Response(capped(res.body, maxBytes, declared > maxBytes, tooLarge), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function capped(body: ReadableStream<Uint8Array>, maxBytes: number, overAtOnce: boolean, tooLarge: (limit: number) => Error): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let seen = 0;
  // Cancelling the source aborts the HTTP request, so the rest is never received.
  const refuse = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
    await reader.cancel().catch(() => undefined);
    controller.error(tooLarge(maxBytes));
  };
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      if (overAtOnce) await refuse(controller);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      seen += value.byteLength;
      if (seen > maxBytes) return refuse(controller);
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
