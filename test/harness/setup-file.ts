// Globals the leak-checking environment reads at the end of each file.
const g = globalThis as {
  __feromoniosOpenClients?: Map<string, unknown>;
  __feromoniosCleanups?: Array<() => Promise<void>>;
};
g.__feromoniosOpenClients ??= new Map();
g.__feromoniosCleanups ??= [];
