import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { HotCounter, HotHistogram } from '../../src/metrics/hot.js';

describe('the hot-path counter and histogram', () => {
  it('write the Prometheus text format as prom-client does: cumulative buckets, +Inf, sum and count per label set', async () => {
    const registry = new Registry();
    const h = new HotHistogram('t_seconds', 'a histogram', ['route', 'status'], [1, 2], registry);
    const c = new HotCounter('t_total', 'a counter', ['tool'], registry);
    h.labels('/a', '200').observe(0.5);
    h.labels('/a', '200').observe(3);
    h.labels('/a', '200').observe(2);
    h.labels('/b', '404').observe(1);
    c.labels('x').inc();
    c.labels('x').inc(2);
    c.labels('y').inc(0);
    expect(await registry.metrics()).toBe(
      [
        '# HELP t_seconds a histogram',
        '# TYPE t_seconds histogram',
        't_seconds_bucket{route="/a",status="200",le="1"} 1',
        't_seconds_bucket{route="/a",status="200",le="2"} 2',
        't_seconds_bucket{route="/a",status="200",le="+Inf"} 3',
        't_seconds_sum{route="/a",status="200"} 5.5',
        't_seconds_count{route="/a",status="200"} 3',
        't_seconds_bucket{route="/b",status="404",le="1"} 1',
        't_seconds_bucket{route="/b",status="404",le="2"} 1',
        't_seconds_bucket{route="/b",status="404",le="+Inf"} 1',
        't_seconds_sum{route="/b",status="404"} 1',
        't_seconds_count{route="/b",status="404"} 1',
        '',
        '# HELP t_total a counter',
        '# TYPE t_total counter',
        't_total{tool="x"} 3',
        't_total{tool="y"} 0',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values', async () => {
    const registry = new Registry();
    new HotCounter('e_total', 'escapes', ['tool'], registry).labels('a"b\\c\nd').inc();
    expect(await registry.metrics()).toContain('e_total{tool="a\\"b\\\\c\\nd"} 1');
  });
});
