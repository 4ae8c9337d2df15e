// Per-key batching: while one batch for a key is in flight, later inputs for that key queue up and
// go together in the next batch, in arrival order. Postgres admits the calls of one rollout under
// one row lock, commit included, so N queued calls cost one commit instead of N in a row.

interface Pending<I, O> {
  input: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export class KeyedBatcher<I, O> {
  private readonly lanes = new Map<string, Pending<I, O>[]>();

  /** `send` gets 1..maxBatch inputs of one key and must answer one output per input, in order. */
  constructor(
    private readonly send: (key: string, inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 100,
  ) {}

  run(key: string, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queued = this.lanes.get(key);
      if (queued) {
        queued.push({ input, resolve, reject });
        return;
      }
      const lane: Pending<I, O>[] = [{ input, resolve, reject }];
      this.lanes.set(key, lane);
      void this.drain(key, lane);
    });
  }

  private async drain(key: string, lane: Pending<I, O>[]): Promise<void> {
    while (lane.length > 0) {
      const batch = lane.splice(0, this.maxBatch);
      try {
        const outputs = await this.send(key, batch.map((p) => p.input));
        batch.forEach((p, i) => p.resolve(outputs[i]!));
      } catch (e) {
        for (const p of batch) p.reject(e);
      }
    }
    this.lanes.delete(key);
  }
}
