// Counter and histogram for the series recorded on every tool call and request. prom-client's own
// validate and hash their labels on every observation, even through a labelled child (about 1.5 us
// for one call's three observations; bench/pipeline.ts prints the figure); these keep one plain
// child per label set, looked up once, so an observation is an add or two. They register in a
// prom-client Registry like its own metrics (it reads them through get() at scrape time).
import type { Registry } from 'prom-client';

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Value[];
}

abstract class HotMetric<C> {
  readonly aggregator = 'sum';
  protected readonly children = new Map<string, { labels: Record<string, string>; child: C }>();

  constructor(
    readonly name: string,
    readonly help: string,
    protected readonly labelNames: readonly [string] | readonly [string, string],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  protected abstract make(): C;

  /** The child of these label values (in labelNames order; one or two labels), created at first use. */
  labels(a: string, b?: string): C {
    const key = b === undefined ? a : `${a}\0${b}`;
    let c = this.children.get(key);
    if (!c) {
      const values = [a, b ?? ''];
      c = { labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!])), child: this.make() };
      this.children.set(key, c);
    }
    return c.child;
  }

  reset(): void {
    this.children.clear();
  }

  abstract get(): Promise<Collected>;
}

export interface CounterChild {
  value: number;
  inc(n?: number): void;
}

export class HotCounter extends HotMetric<CounterChild> {
  readonly type = 'counter';

  protected make(): CounterChild {
    return {
      value: 0,
      inc(n = 1) {
        this.value += n;
      },
    };
  }

  async get(): Promise<Collected> {
    const values = [...this.children.values()].map(({ labels, child }) => ({ labels, value: child.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export interface HistogramChild {
  observe(v: number): void;
}

class Buckets implements HistogramChild {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last one above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

export class HotHistogram extends HotMetric<Buckets> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly [string] | readonly [string, string],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  protected make(): Buckets {
    return new Buckets(this.bounds);
  }

  async get(): Promise<Collected> {
    const values: Value[] = [];
    for (const { labels, child } of this.children.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += child.counts[i]!;
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...labels, le: '+Inf' }, value: child.count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: child.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: child.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
