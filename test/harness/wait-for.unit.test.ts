import { waitFor } from './index';

describe('waitFor', () => {
  it('names what it waited for and the last value the condition returned', async () => {
    let n = 0;
    await expect(waitFor(() => ++n >= 1_000_000 && n, { timeoutMs: 100, message: 'a million' })).rejects.toThrow(
      /^waitFor timed out after 100 ms: a million \(last value: false\)$/,
    );
    let rows = 0;
    await expect(
      waitFor(
        () => {
          rows += 1;
          return rows > 1_000_000;
        },
        { timeoutMs: 100, intervalMs: 10, message: () => `a million rows (now ${rows})` },
      ),
    ).rejects.toThrow(/a million rows \(now ([2-9]|\d\d+)\)/); // computed when it gave up, not before
  });

  it('reports the last error the condition threw', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('connection refused');
        },
        { timeoutMs: 50 },
      ),
    ).rejects.toThrow('waitFor timed out after 50 ms: condition (last error: connection refused)');
  });

  it('resolves with the first truthy value', async () => {
    let calls = 0;
    await expect(waitFor(() => (++calls === 3 ? { calls } : null), { intervalMs: 1 })).resolves.toEqual({ calls: 3 });
  });
});
