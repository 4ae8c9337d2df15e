import { describe, expect, it } from 'vitest';
import { failureOfHttp } from '../../src/metrics/outcomes.js';

describe('failureOfHttp: whose failure a reply is', () => {
  it.each(['RFT_ERR_BAD_ROW', 'RFT_ERR_ROW_UNREADABLE', 'RFT_ERR_ROW_TOO_DEEP'])('%s is the dataset row\'s, whatever its status', (code) => {
    expect(failureOfHttp(400, code)).toEqual({ kind: 'data', where: 'row' });
    expect(failureOfHttp(500, code)).toEqual({ kind: 'data', where: 'row' });
  });

  it('another 4xx is nobody\'s failure, a 5xx is ours', () => {
    expect(failureOfHttp(400, 'RFT_ERR_BAD_REQUEST')).toBeNull();
    expect(failureOfHttp(503, 'RFT_ERR_STORE')?.kind).toBe('infra');
  });
});
