// A fixed number of workers over a job list, in list order. An aborted signal stops workers from
// taking new jobs; the ones in flight finish (so their results are kept).
export async function pool<J>(jobs: readonly J[], concurrency: number, work: (job: J) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length && !signal?.aborted) await work(jobs[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
}
