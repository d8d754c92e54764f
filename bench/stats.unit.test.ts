import fs from 'node:fs';
import { procCpuTicks } from './stats';

/** A stat line: field 3 is the state, then field n holds n − 3 (field 14 holds 11, field 17 holds 14). */
const statLine = (pid: number, name: string) =>
  `${pid} (${name}) S ${Array.from({ length: 49 }, (_, i) => i + 1).join(' ')}\n`;

describe('procCpuTicks (the CPU the sink benchmark bills each side)', () => {
  it('adds utime, stime, cutime and cstime — fields 14 to 17, not their neighbours', () => {
    // fields 14-17 hold 11, 12, 13, 14 here; their neighbours 13 (cmajflt) and 18 (priority) hold 10 and 15
    expect(procCpuTicks(statLine(42, 'postgres'))).toEqual({ name: 'postgres', ticks: 11 + 12 + 13 + 14 });
  });

  it('reads a name with spaces and parentheses whole', () => {
    expect(procCpuTicks(statLine(7, 'a) b (c'))).toEqual({ name: 'a) b (c', ticks: 50 });
  });

  it('reads this process’s own line as numbers', () => {
    const { name, ticks } = procCpuTicks(fs.readFileSync('/proc/self/stat', 'utf8'));
    expect(name.length).toBeGreaterThan(0);
    expect(Number.isInteger(ticks) && ticks >= 0).toBe(true);
  });
});
