import { InvalidArgumentError } from 'commander';

/** An integer option within [min, max]; anything else is a usage error naming the range. */
export const integer =
  (min: number, max: number) =>
  (v: string): number => {
    if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max)
      throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return Number(v);
  };

/** A decimal option within [min, max]. */
export const float =
  (min: number, max: number) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`must be a number from ${min} to ${max}`);
    return n;
  };

/** A comma-separated list (repeating the option appends). */
export const list = (v: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  ...v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
];

/** A non-negative integer that may exceed 2^53 (a sequence number). */
export const sequence = (v: string): string => {
  if (!/^(0|[1-9]\d{0,18})$/.test(v) || BigInt(v) > 9223372036854775807n)
    throw new InvalidArgumentError('must be a sequence number from 0 to 9223372036854775807');
  return v;
};
