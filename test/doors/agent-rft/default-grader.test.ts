// Several graders and no RFT_DEFAULT_GRADER: which one grades is the user's choice. POST /grade and
// /v1/job-config answer a coded error naming the setting, never a guess and never a job fragment
// without a grader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newTrace, startFixtureServer } from '../../helpers/fixtures.js';
import type { TestServer } from '../../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false });
});
afterAll(() => s.close());

const get = (url: string) => s.app.inject({ method: 'GET', url, headers: bearer(s.key) });
const grade = () =>
  s.app.inject({ method: 'POST', url: '/grade', headers: bearer(s.key), payload: { sample: { output_text: '4.2' }, item: { reference_answer: '4.2' }, trace_id: newTrace() } });

describe('several graders and no default', () => {
  it('POST /grade names RFT_DEFAULT_GRADER and the graders to choose from', async () => {
    const res = await grade();
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatchObject({ code: 'RFT_ERR_NO_DEFAULT_GRADER', details: { setting: 'RFT_DEFAULT_GRADER', known_graders: ['broken', 'exact', 'slow'] } });
    expect(res.json().error.message).toContain('RFT_DEFAULT_GRADER');
  });

  it('GET /v1/job-config answers the same coded error instead of a fragment without a grader', async () => {
    const res = await get('/v1/job-config?base_url=https://rft.example.com');
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatchObject({ code: 'RFT_ERR_NO_DEFAULT_GRADER', details: { known_graders: ['broken', 'exact', 'slow'] } });
  });

  it('GET /v1/job-config?grader= chooses one', async () => {
    const res = (await get('/v1/job-config?base_url=https://rft.example.com&grader=exact')).json();
    expect(res.grader).toMatchObject({ type: 'endpoint', name: 'exact', url: 'https://rft.example.com/graders/exact' });
  });

  it('RFT_DEFAULT_GRADER chooses one for both', async () => {
    const chosen = await startFixtureServer({ listen: false, env: { RFT_DEFAULT_GRADER: 'exact' } });
    try {
      expect((await chosen.app.inject({ method: 'GET', url: '/v1/job-config', headers: bearer(chosen.key) })).json().grader.name).toBe('exact');
    } finally {
      await chosen.close();
    }
  });
});
